/**
 * `savepoint/fs` — the durable local-directory adapter. Node-only (imports `node:fs`),
 * so it lives behind its own subpath and the core entry stays runtime-neutral.
 *
 * @module savepoint/fs
 */
export {
  fsStorage,
  FS_INTERNAL_PREFIX,
  type FsStorage,
  type FsStorageOptions,
  type FsOpenReport,
  type FsLayout,
} from '../storage/fs/index.js';
