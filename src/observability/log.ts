// pino to stdout: one event a line, a request id on every line of a request. JSON for machines;
// for people at a terminal, lines they can read (pino-pretty), unless SWITCHYARD_LOG_FORMAT says.
import pino, { type Logger } from 'pino';
import pretty from 'pino-pretty';

export type LogFormat = 'auto' | 'pretty' | 'json';

/** Whether lines go out pretty: asked for, or `auto` on a terminal. */
export function prettyLogs(format: LogFormat, stdoutIsTerminal = process.stdout.isTTY === true): boolean {
  return format === 'pretty' || (format === 'auto' && stdoutIsTerminal);
}

export function createLogger(level: string, destination?: pino.DestinationStream, format: LogFormat = 'json'): Logger {
  const options: pino.LoggerOptions = {
    level,
    base: { service: 'switchyard' },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: { paths: ['password', 'newPassword', 'currentPassword', 'accessToken', 'token', 'req.headers.authorization'], censor: '[redacted]' },
  };
  if (!destination && prettyLogs(format)) {
    // In this thread, synchronously: a transport's worker would lose the last lines of a crash.
    return pino(options, pretty({ colorize: process.stdout.isTTY === true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname,service', sync: true }));
  }
  return pino(options, destination ?? pino.destination({ sync: false }));
}
