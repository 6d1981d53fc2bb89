// JWTs (CONTRACT §5): HS256 with a pre-built KeyObject, because jsonwebtoken re-parses a string
// secret on every call (../shared/notes/stack-node20.md: 2.7k vs 30k verifications a second).
import { createSecretKey, randomUUID, type KeyObject } from 'node:crypto';
import jwt from 'jsonwebtoken';
import type { TokenRole } from '../domain/vocabulary.js';

export const ALGORITHM = 'HS256' as const;

export interface Claims {
  sub: string;
  role: TokenRole;
  /** The user's credential version: a password change bumps it and retires older tokens. */
  ver?: number;
  nodeGroup?: string;
  nodeId?: string;
  iat: number;
  exp: number;
  jti: string;
}

export class TokenSigner {
  readonly key: KeyObject;

  constructor(secret: Uint8Array) {
    this.key = createSecretKey(secret);
  }

  sign(claims: Omit<Claims, 'iat' | 'exp' | 'jti'>, ttlMs: number): string {
    return jwt.sign({ ...claims }, this.key, {
      algorithm: ALGORITHM,
      expiresIn: Math.max(1, Math.floor(ttlMs / 1000)),
      jwtid: randomUUID(),
    });
  }

  nodeToken(group: string, nodeId: string, ttlMs: number): string {
    return this.sign({ sub: `node:${group}/${nodeId}`, role: 'node', nodeGroup: group, nodeId }, ttlMs);
  }
}
