import { assertReadLinks, type ReadLinks } from '../contract/linked-read.js';
import { assertKey, assertPrefix } from './keys.js';

/**
 * A store's `getLinked` arguments checked, before anything is read: the key, the links, the keys
 * they can build (`x` stands for any member text: every one is a plain run of segment characters),
 * and the prefixes given outright. `where` names the call in the errors.
 */
export function assertLinkedReadArguments(key: string, links: ReadLinks, where: string): void {
  assertKey(key);
  assertReadLinks(links, where);
  if (links.get) assertKey(`${links.get.before}x${links.get.after}`);
  if (links.list) assertPrefix(`${links.list.before}x${links.list.after}`);
  for (const prefix of [links.keys, links.entries, links.first?.prefix, links.keysIfAbsent]) if (prefix !== undefined) assertPrefix(prefix);
}
