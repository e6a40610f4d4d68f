/** fsStorage options of the campaign's journal modes (shared by the parent and its child writers). */
export type JournalMode = 'journal' | 'journal-rotating';

/** `journal-rotating` checkpoints the journal every few checkpoints (2 KB), so kills also land while it is emptied. */
export function journalOptions(mode: string | undefined): { journal?: boolean; journalCheckpointBytes?: number } {
  if (mode === 'journal') return { journal: true };
  if (mode === 'journal-rotating') return { journal: true, journalCheckpointBytes: 2048 };
  return {};
}
