// Reading a password: from the terminal without echo, else the first line of standard input
// (`--password-stdin`, or a pipe), never from the command line where `ps` would show it.

export async function readPassword(prompt: string, line = 0, stdin: NodeJS.ReadStream = process.stdin): Promise<string> {
  if (!stdin.isTTY) return pipedLine(line);
  process.stderr.write(prompt);
  stdin.setRawMode(true);
  stdin.resume();
  stdin.setEncoding('utf8');
  try {
    return await new Promise<string>((resolve, reject) => {
      let text = '';
      const onData = (chunk: string) => {
        for (const ch of chunk) {
          if (ch === '\r' || ch === '\n') {
            stdin.off('data', onData);
            process.stderr.write('\n');
            resolve(text);
            return;
          }
          if (ch === '\u0003') {
            stdin.off('data', onData);
            process.stderr.write('\n');
            reject(Object.assign(new Error('interrupted'), { interrupted: true }));
            return;
          }
          if (ch === '\u007f' || ch === '\b') text = text.slice(0, -1);
          else if (ch >= ' ') text += ch;
        }
      };
      stdin.on('data', onData);
    });
  } finally {
    stdin.setRawMode(false);
    stdin.pause();
  }
}

let piped: Promise<string[]> | null = null;

/** The lines of standard input when it is not a terminal, read once: `login` takes the first, `password` the first two. */
export function stdinLines(stdin: NodeJS.ReadableStream = process.stdin): Promise<string[]> {
  piped ??= (async () => {
    let text = '';
    stdin.setEncoding('utf8');
    for await (const chunk of stdin) text += chunk as string;
    return text.split(/\r?\n/);
  })();
  return piped;
}

/** The n-th line of a piped standard input (0: the first). */
export async function pipedLine(n: number): Promise<string> {
  return (await stdinLines())[n] ?? '';
}
