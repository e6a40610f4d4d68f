/** fsStorage options of the campaign's journal modes (shared by the parent and its child writers). */
export type JournalMode = 'journal' | 'journal-rotating' | 'journal-small';

/** `journal-rotating` checkpoints the journal every few checkpoints (2 KB), so kills also land while it is emptied; `journal-small` fits a small tmpfs. */
export function journalOptions(mode: string | undefined): { journal?: boolean; journalCheckpointBytes?: number } {
  if (mode === 'journal') return { journal: true };
  if (mode === 'journal-rotating') return { journal: true, journalCheckpointBytes: 2048 };
  // Small preallocated files (72 KiB each), for a small tmpfs.
  if (mode === 'journal-small') return { journal: true, journalCheckpointBytes: 8192 };
  return {};
}
