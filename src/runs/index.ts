export { listRunSnapshots, getRunSnapshot, type ListRunSnapshotsOptions, type GetRunSnapshotOptions } from './list-snapshots.js';
export { deleteRun, type DeleteRunOptions, type DeleteRunResult } from './delete-run.js';
