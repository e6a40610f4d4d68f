import { CheckpointError } from '../../contract/errors.js';
import { fromBase64 } from '../../codec/base64.js';
import { toHex } from '../../codec/sha256.js';
import { importAesKey, hkdfSha256, KEY_BYTES, pbkdf2Sha256, randomBytes } from './primitives.js';

/** PBKDF2-SHA-256 iterations for a passphrase by default (OWASP's 2023 figure for this hash). */
export const DEFAULT_PBKDF2_ITERATIONS = 600_000;
/** Fewest iterations accepted: below this a passphrase is too cheap to guess. */
export const MIN_PBKDF2_ITERATIONS = 10_000;
/** Most iterations accepted from a stored keyring: a hostile keyring must not cost unbounded time. */
export const MAX_PBKDF2_ITERATIONS = 10_000_000;
/** Bytes of a passphrase's salt. */
export const SALT_BYTES = 16;

/** How a passphrase was stretched into a key: stored beside each wrap it made. */
export interface PassphraseKdf {
  readonly name: 'PBKDF2-SHA-256';
  readonly iterations: number;
  readonly salt: Uint8Array;
}

/** A user key made ready to wrap and unwrap data keys: its public id and its key-encryption key. */
export interface KeyEncryptionKey {
  /** 16 hex digits that name the key without revealing it (HKDF of the key, one-way). */
  readonly id: string;
  readonly kek: CryptoKey;
}

const encoder = new TextEncoder();
const MAKE = Symbol('EncryptionKey');
const ID_INFO = encoder.encode('savepoint/key-id/v1');
const KEK_INFO = encoder.encode('savepoint/key-wrap/v1');

async function kekOf(raw: Uint8Array): Promise<KeyEncryptionKey> {
  const empty = new Uint8Array(0);
  const [id, wrap] = await Promise.all([hkdfSha256(raw, empty, ID_INFO, 8), hkdfSha256(raw, empty, KEK_INFO, KEY_BYTES)]);
  return { id: toHex(id), kek: await importAesKey(wrap) };
}

function invalid(why: string): CheckpointError {
  // The key text is never echoed: it is the secret.
  return new CheckpointError('checkpoint_config_invalid', `invalid encryption key: ${why}`);
}

/**
 * A user's key for an encrypted store: 32 random bytes, or a passphrase stretched with
 * PBKDF2-SHA-256. It wraps the store's data key; it never encrypts checkpoints itself.
 *
 * The secret lives in private fields: `console.log`, `JSON.stringify` and `String()` show
 * only the kind (and, for raw keys, nothing of the bytes).
 */
export class EncryptionKey {
  readonly kind: 'raw' | 'passphrase';
  readonly #raw: Uint8Array | undefined;
  readonly #passphrase: Uint8Array | undefined;
  readonly #iterations: number;
  #kek: Promise<KeyEncryptionKey> | undefined;
  readonly #derived = new Map<string, Promise<KeyEncryptionKey>>();

  private constructor(token: symbol, kind: 'raw' | 'passphrase', secret: Uint8Array, iterations: number) {
    // Callable from JavaScript despite `private`: only the factories below may make a key.
    if (token !== MAKE) throw invalid('make keys with EncryptionKey.fromBytes, fromText, fromEnv, fromPassphrase or generate');
    this.kind = kind;
    this.#raw = kind === 'raw' ? secret.slice() : undefined;
    this.#passphrase = kind === 'passphrase' ? secret.slice() : undefined;
    this.#iterations = iterations;
  }

  /** A key from 32 raw bytes (copied). */
  static fromBytes(bytes: Uint8Array): EncryptionKey {
    if (!(bytes instanceof Uint8Array) || bytes.length !== KEY_BYTES) throw invalid(`raw keys are ${KEY_BYTES} bytes`);
    return new EncryptionKey(MAKE, 'raw', bytes, 0);
  }

  /** A new random key (32 bytes from the platform's cryptographic generator). */
  static generate(): EncryptionKey {
    return new EncryptionKey(MAKE, 'raw', randomBytes(KEY_BYTES), 0);
  }

  /**
   * A passphrase, stretched with PBKDF2-HMAC-SHA-256 and a random 16-byte salt per wrap
   * (`iterations`, default 600 000, at least 10 000, is stored with the wrap).
   */
  static fromPassphrase(passphrase: string, options: { readonly iterations?: number } = {}): EncryptionKey {
    if (typeof passphrase !== 'string' || passphrase.length < 8) throw invalid('a passphrase needs at least 8 characters');
    if (typeof options !== 'object' || options === null) throw invalid('options must be an object');
    const iterations = options.iterations ?? DEFAULT_PBKDF2_ITERATIONS;
    if (!Number.isInteger(iterations) || iterations < MIN_PBKDF2_ITERATIONS || iterations > MAX_PBKDF2_ITERATIONS)
      throw invalid(`PBKDF2 iterations must be an integer from ${MIN_PBKDF2_ITERATIONS} to ${MAX_PBKDF2_ITERATIONS}`);
    return new EncryptionKey(MAKE, 'passphrase', encoder.encode(passphrase), iterations);
  }

  /**
   * A key from its text form: 64 hex digits or the base64 of 32 bytes (a raw key), or
   * `passphrase:<text>`. What `--key-file` and `SAVEPOINT_KEY` hold.
   */
  static fromText(text: string): EncryptionKey {
    if (typeof text !== 'string') throw invalid('key text must be a string');
    const trimmed = text.trim();
    if (trimmed.startsWith('passphrase:')) return EncryptionKey.fromPassphrase(trimmed.slice('passphrase:'.length));
    const raw = /^[0-9a-fA-F]{64}$/.test(trimmed) ? hexBytes(trimmed) : fromBase64(trimmed);
    if (!raw || raw.length !== KEY_BYTES) throw invalid(`expected 64 hex digits, the base64 of ${KEY_BYTES} bytes, or passphrase:<text>`);
    return EncryptionKey.fromBytes(raw);
  }

  /** The key in the environment variable `name` (text form, see {@link EncryptionKey.fromText}). */
  static fromEnv(name = 'SAVEPOINT_KEY'): EncryptionKey {
    const env = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env;
    const text = env?.[name];
    if (text === undefined || text === '') throw invalid(`the environment variable ${name} is not set`);
    return EncryptionKey.fromText(text);
  }

  /** The text form of a raw key (64 hex digits), to keep in a secret manager or a key file. */
  static toText(key: EncryptionKey): string {
    if (!(key instanceof EncryptionKey) || key.#raw === undefined) throw invalid('a passphrase key has no text form but its passphrase');
    return toHex(key.#raw);
  }

  /** PBKDF2 parameters for a new wrap by this key; `undefined` for a raw key. */
  newKdf(): PassphraseKdf | undefined {
    return this.kind === 'passphrase' ? { name: 'PBKDF2-SHA-256', iterations: this.#iterations, salt: randomBytes(SALT_BYTES) } : undefined;
  }

  /** The key-encryption key: the raw key's, or the passphrase's under `kdf`. */
  resolve(kdf: PassphraseKdf | undefined): Promise<KeyEncryptionKey> | undefined {
    if (this.#raw !== undefined) return kdf === undefined ? (this.#kek ??= kekOf(this.#raw)) : undefined;
    if (kdf === undefined || this.#passphrase === undefined) return undefined;
    const cacheKey = `${kdf.iterations}:${toHex(kdf.salt)}`;
    let derived = this.#derived.get(cacheKey);
    if (!derived) {
      derived = pbkdf2Sha256(this.#passphrase, kdf.salt, kdf.iterations, KEY_BYTES).then(kekOf);
      this.#derived.set(cacheKey, derived);
    }
    return derived;
  }

  toString(): string {
    return `EncryptionKey(${this.kind})`;
  }

  toJSON(): { kind: string } {
    return { kind: this.kind };
  }
}

function hexBytes(text: string): Uint8Array {
  const out = new Uint8Array(text.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = Number.parseInt(text.slice(2 * i, 2 * i + 2), 16);
  return out;
}
