// A signing key given in the settings, checked where the settings are read: a bad one stops the
// start with the setting named, before anything signs with it (src/auth/tokens.ts).
import { createPrivateKey, type KeyObject } from 'node:crypto';

/** Why a PEM cannot sign ES256 tokens, or null if it can. */
export function es256KeyProblem(pem: string): string | null {
  let key: KeyObject;
  try {
    key = createPrivateKey(pem);
  } catch {
    return 'must be a private key in PEM';
  }
  return key.asymmetricKeyType === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1' ? null : 'must be an EC private key on the P-256 curve (ES256)';
}
