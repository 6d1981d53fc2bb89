// Where a field the service names in a 400's `errors[].path` (body.streams[0].videoBR) sits in
// the JSON text an operator typed, so the editor can select it.

type Span = { start: number; end: number };

/** body.streams[0].videoBR → streams[0].videoBR, the key the scanner files values under. */
export function canonical(path: string): string {
  return path.replace(/^body\.?/, '');
}

/** Every value's span in a JSON text, by path; whatever is after a syntax error is left out. */
export function spans(text: string): Map<string, Span> {
  const out = new Map<string, Span>();
  let i = 0;
  const ws = () => {
    while (i < text.length && ' \t\r\n'.includes(text[i]!)) i++;
  };
  const str = (): string => {
    const start = i++;
    while (i < text.length && text[i] !== '"') i += text[i] === '\\' ? 2 : 1;
    i++;
    try {
      return JSON.parse(text.slice(start, i)) as string;
    } catch {
      return text.slice(start + 1, i - 1);
    }
  };
  const value = (path: string, depth: number): void => {
    if (depth > 64) throw new Error('too deep');
    ws();
    const start = i;
    const c = text[i];
    if (c === '{') {
      i++;
      ws();
      while (i < text.length && text[i] !== '}') {
        if (text[i] !== '"') throw new Error('key expected');
        const key = str();
        ws();
        if (text[i] !== ':') throw new Error(': expected');
        i++;
        value(path === '' ? key : `${path}.${key}`, depth + 1);
        ws();
        if (text[i] === ',') i++;
        ws();
      }
      i++;
    } else if (c === '[') {
      i++;
      ws();
      for (let n = 0; i < text.length && text[i] !== ']'; n++) {
        value(`${path}[${n}]`, depth + 1);
        ws();
        if (text[i] === ',') i++;
        ws();
      }
      i++;
    } else if (c === '"') {
      str();
    } else {
      while (i < text.length && !',}] \t\r\n'.includes(text[i]!)) i++;
      if (i === start) throw new Error('value expected');
    }
    out.set(path, { start, end: i });
  };
  try {
    value('', 0);
  } catch {
    /* the spans found so far */
  }
  return out;
}

/** The span of the named field, else of the nearest enclosing one found (a missing field's object). */
export function locate(text: string, path: string): Span | null {
  const all = spans(text);
  let p = canonical(path);
  for (;;) {
    const hit = all.get(p);
    if (hit) return hit;
    if (p === '') return null;
    const cut = Math.max(p.lastIndexOf('.'), p.lastIndexOf('['));
    p = cut < 0 ? '' : p.slice(0, cut);
  }
}
