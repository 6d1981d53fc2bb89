// JWTs (docs/security.md): HS256 by default, ES256 when configured. Keys are pre-built KeyObjects,
// because jsonwebtoken re-parses a string secret on every call (2.7k against 30k verifications a
// second, measured on the development machine). Under ES256 the public key is published as a JWKS, so that
// other services can check Switchyard's tokens without holding a secret that could mint them.
import { createHash, createPrivateKey, createPublicKey, createSecretKey, randomUUID, type KeyObject } from 'node:crypto';
import jwt from 'jsonwebtoken';
import type { TokenRole } from '../domain/vocabulary.js';

export const ALGORITHMS = ['HS256', 'ES256'] as const;
export type JwtAlgorithm = (typeof ALGORITHMS)[number];

/** What signs tokens, in a form that crosses to a worker thread: the HS256 secret, or the ES256 private key as PKCS#8 DER. */
export interface SigningKey {
  algorithm: JwtAlgorithm;
  material: Uint8Array;
}

export interface Claims {
  sub: string;
  role: TokenRole;
  /** The user's credential version: a password change bumps it and retires older tokens. */
  ver?: number;
  nodeGroup?: string;
  nodeId?: string;
  /** A node token's generation: revoking a node's tokens moves it on (node-tokens.ts). */
  gen?: number;
  iat: number;
  exp: number;
  jti: string;
}

/** A public key as RFC 7517 describes it, with its RFC 7638 thumbprint as `kid`. */
export interface PublicJwk {
  kty: 'EC';
  crv: 'P-256';
  x: string;
  y: string;
  use: 'sig';
  alg: 'ES256';
  kid: string;
}

export class TokenSigner {
  readonly algorithm: JwtAlgorithm;
  /** Signs. */
  readonly key: KeyObject;
  /** Verifies: the secret itself under HS256, the public key under ES256. */
  readonly verifyKey: KeyObject;
  /** The published key (ES256 only). */
  readonly jwk: PublicJwk | null;

  /** An HS256 secret (bytes), or a SigningKey. */
  constructor(key: Uint8Array | SigningKey) {
    const signing: SigningKey = key instanceof Uint8Array ? { algorithm: 'HS256', material: key } : key;
    this.algorithm = signing.algorithm;
    if (signing.algorithm === 'HS256') {
      this.key = this.verifyKey = createSecretKey(signing.material);
      this.jwk = null;
    } else {
      this.key = createPrivateKey({ key: Buffer.from(signing.material), format: 'der', type: 'pkcs8' });
      this.verifyKey = createPublicKey(this.key);
      this.jwk = publicJwk(this.verifyKey);
    }
  }

  sign(claims: Omit<Claims, 'iat' | 'exp' | 'jti'>, ttlMs: number): string {
    return jwt.sign({ ...claims }, this.key, {
      algorithm: this.algorithm,
      expiresIn: Math.max(1, Math.floor(ttlMs / 1000)),
      jwtid: randomUUID(),
      ...(this.jwk ? { keyid: this.jwk.kid } : {}),
    });
  }

  nodeToken(group: string, nodeId: string, ttlMs: number, gen = 0): string {
    return this.sign({ sub: `node:${group}/${nodeId}`, role: 'node', nodeGroup: group, nodeId, ...(gen > 0 ? { gen } : {}) }, ttlMs);
  }
}

/** A PEM private key as the PKCS#8 DER a SigningKey carries. */
export function pkcs8Der(pem: string): Uint8Array {
  return createPrivateKey(pem).export({ format: 'der', type: 'pkcs8' });
}

function publicJwk(key: KeyObject): PublicJwk {
  const { x, y } = key.export({ format: 'jwk' }) as { x: string; y: string };
  // RFC 7638: the SHA-256 of the required members, in lexicographic order, without whitespace.
  const kid = createHash('sha256')
    .update(JSON.stringify({ crv: 'P-256', kty: 'EC', x, y }))
    .digest('base64url');
  return { kty: 'EC', crv: 'P-256', x, y, use: 'sig', alg: 'ES256', kid };
}
