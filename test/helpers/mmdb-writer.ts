// Writes a small MaxMind DB (https://maxmind.github.io/MaxMind-DB/) for tests: an IPv4 search
// tree with 24-bit records, a data section and the metadata. It lets the tests read a database
// in MaxMind's own City layout (`location.latitude`), which no freely licensed package ships.
type Value = string | number | boolean | Value[] | { [k: string]: Value } | { double: number } | { uint32: number };

function control(type: number, size: number): Buffer {
  const ext = type > 7;
  const first = (ext ? 0 : type) << 5;
  const bytes: number[] = [];
  let sizeBits: number;
  const more: number[] = [];
  if (size < 29) sizeBits = size;
  else if (size < 285) {
    sizeBits = 29;
    more.push(size - 29);
  } else {
    sizeBits = 30;
    const s = size - 285;
    more.push(s >> 8, s & 0xff);
  }
  bytes.push(first | sizeBits);
  if (ext) bytes.push(type - 7);
  bytes.push(...more);
  return Buffer.from(bytes);
}

function uint(type: number, n: number): Buffer {
  const bytes: number[] = [];
  for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v % 256);
  return Buffer.concat([control(type, bytes.length), Buffer.from(bytes)]);
}

function encode(v: Value): Buffer {
  if (typeof v === 'string') {
    const b = Buffer.from(v, 'utf8');
    return Buffer.concat([control(2, b.length), b]);
  }
  if (typeof v === 'boolean') return control(14, v ? 1 : 0);
  if (typeof v === 'number') return Number.isInteger(v) && v >= 0 && v < 65536 ? uint(5, v) : encode({ double: v });
  if (Array.isArray(v)) return Buffer.concat([control(11, v.length), ...v.map(encode)]);
  if ('double' in v && typeof v.double === 'number' && Object.keys(v).length === 1) {
    const b = Buffer.alloc(8);
    b.writeDoubleBE(v.double);
    return Buffer.concat([control(3, 8), b]);
  }
  if ('uint32' in v && typeof v.uint32 === 'number' && Object.keys(v).length === 1) return uint(6, v.uint32);
  const entries = Object.entries(v as Record<string, Value>);
  return Buffer.concat([control(7, entries.length), ...entries.flatMap(([k, val]) => [encode(k), encode(val)])]);
}

interface TrieNode {
  children: [TrieNode | number | null, TrieNode | number | null];
}

/** An IPv4 City database: each network (`a.b.c.d/len`) maps to its record. */
export function writeMmdb(networks: Array<[string, Value]>, databaseType = 'GeoIP2-City'): Buffer {
  const root: TrieNode = { children: [null, null] };
  const data: Buffer[] = [];
  let dataLength = 0;
  for (const [cidr, record] of networks) {
    const [ip, len] = cidr.split('/') as [string, string];
    const bits = ip.split('.').reduce((acc, o) => acc * 256 + Number(o), 0);
    const offset = dataLength;
    const encoded = encode(record);
    data.push(encoded);
    dataLength += encoded.length;
    let node = root;
    for (let depth = 0; depth < Number(len); depth++) {
      const bit = Math.floor(bits / 2 ** (31 - depth)) % 2;
      if (depth === Number(len) - 1) {
        node.children[bit] = offset;
        break;
      }
      let next = node.children[bit];
      if (typeof next !== 'object' || next === null) node.children[bit] = next = { children: [null, null] };
      node = next;
    }
  }
  const nodes: TrieNode[] = [];
  const index = new Map<TrieNode, number>();
  const queue = [root];
  while (queue.length > 0) {
    const n = queue.shift()!;
    index.set(n, nodes.length);
    nodes.push(n);
    for (const c of n.children) if (c !== null && typeof c === 'object') queue.push(c);
  }
  const count = nodes.length;
  const tree = Buffer.alloc(count * 6);
  nodes.forEach((n, i) => {
    n.children.forEach((c, side) => {
      const value = c === null ? count : typeof c === 'number' ? count + 16 + c : index.get(c)!;
      tree.writeUIntBE(value, i * 6 + side * 3, 3);
    });
  });
  const metadata = encode({
    node_count: { uint32: count },
    record_size: 24,
    ip_version: 4,
    database_type: databaseType,
    languages: ['en'],
    binary_format_major_version: 2,
    binary_format_minor_version: 0,
    build_epoch: { uint32: Math.floor(Date.now() / 1000) },
    description: { en: 'Switchyard test database' },
  });
  return Buffer.concat([tree, Buffer.alloc(16), ...data, Buffer.from([0xab, 0xcd, 0xef]), Buffer.from('MaxMind.com'), metadata]);
}
