// `npm run hash-password`: reads a password on stdin, prints the scrypt hash the config takes
// (auth.adminPasswordHash, auth.users[].passwordHash), so no plain password sits in a file.
import { hash } from '../auth/scrypt-task.js';

let input = '';
process.stdin.setEncoding('utf8');
if (process.stdin.isTTY) process.stderr.write('password (then Enter, Ctrl-D): ');
process.stdin.on('data', (c: string) => (input += c));
process.stdin.on('end', () => {
  const password = input.replace(/\r?\n$/, '');
  if (password.length < 12) {
    process.stderr.write('hash-password: the password must be at least 12 characters\n');
    process.exit(2);
  }
  process.stdout.write(`${hash(password)}\n`);
});
