// Where the service may send its own requests (src/policy/outbound-url.ts): link-local and cloud
// metadata addresses are refused however a URL spells them; loopback and private ones are fine.
import test from 'ava';
import fc from 'fast-check';
import { forbiddenAddress, outboundUrlProblem } from '../../src/policy/outbound-url.js';

const octet = fc.integer({ min: 0, max: 255 });

test('any address in 169.254.0.0/16 is refused, written dotted, as one number, in hex, or mapped into IPv6', (t) => {
  fc.assert(
    fc.property(octet, octet, (c, d) => {
      const n = (169 << 24) + (254 << 16) + (c << 8) + d;
      const spellings = [`http://169.254.${c}.${d}/x`, `http://${n >>> 0}/x`, `http://0x${(n >>> 0).toString(16)}/x`, `http://[::ffff:169.254.${c}.${d}]/x`, `https://169.254.${c}.${d}:8443/`];
      for (const url of spellings) {
        if (outboundUrlProblem(url) === null) return false;
        if (outboundUrlProblem(url, { allowLinkLocal: true }) !== null) return false;
      }
      return true;
    }),
  );
  t.pass();
});

test('loopback, private and public addresses and names are fine; other schemes, credentials and metadata names are not', (t) => {
  for (const ok of ['http://127.0.0.1:8080/hook', 'http://10.1.2.3/x', 'https://192.168.0.10/', 'http://[::1]:9/x', 'https://hooks.example.com/admission', 'http://172.16.0.1/']) {
    t.is(outboundUrlProblem(ok), null, ok);
  }
  for (const bad of [
    'ftp://example.com/',
    'http://user:pw@example.com/',
    'http://metadata.google.internal/',
    'http://[fe80::1%25eth0]/',
    'http://[fd00:ec2::254]/',
    'http://100.100.100.200/',
    'not a url',
  ]) {
    t.not(outboundUrlProblem(bad), null, bad);
  }
  t.not(forbiddenAddress('fe80::abcd'), null);
  t.is(forbiddenAddress('10.0.0.1'), null);
});
