// pino, JSON to stdout: one line per event, a request id on every line of a request.
import pino, { type Logger } from 'pino';

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'switchyard' },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: { paths: ['password', 'newPassword', 'currentPassword', 'accessToken', 'token', 'req.headers.authorization'], censor: '[redacted]' },
    },
    destination ?? pino.destination({ sync: false }),
  );
}
