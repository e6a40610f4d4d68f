export { listRunSnapshots, getRunSnapshot, type ListRunSnapshotsOptions, type GetRunSnapshotOptions } from './list-snapshots.js';
export { deleteRun, type DeleteRunOptions, type DeleteRunResult } from './delete-run.js';
export { diffSnapshots, type SnapshotChange, type DiffSnapshotsOptions } from './diff.js';
