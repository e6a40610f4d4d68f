import { CheckpointError } from '../../contract/errors.js';
import { hmacSha256 } from './primitives.js';
import type { Session } from './session.js';

const encoder = new TextEncoder();

/**
 * The run id that stands for `name` in a store: HMAC-SHA-256 of `name` under a key derived
 * from the store's data key, shaped as a UUID v4 (122 bits of the MAC, the version and
 * variant bits set) so every profile accepts it, phasedWorkflow's UUID rule included.
 *
 * The same name gives the same id in the same store, so a run is found again, listed by its
 * prefix and kept in order like any other; only holders of a key can compute the id from the
 * name, or test a guess; the same name gives unrelated ids in two stores. The name itself is
 * never stored: a caller that needs it back keeps it in its payload, which is encrypted.
 */
export async function hiddenRunIdOf(session: Session, name: string): Promise<string> {
  if (typeof name !== 'string' || name.length === 0)
    throw new CheckpointError('checkpoint_config_invalid', 'hiddenRunId: name must be a non-empty string');
  const mac = await hmacSha256(session.runIdKey, encoder.encode(name));
  mac[6] = (mac[6]! & 0x0f) | 0x40;
  mac[8] = (mac[8]! & 0x3f) | 0x80;
  let hex = '';
  for (let i = 0; i < 16; i++) hex += mac[i]!.toString(16).padStart(2, '0');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}
