/**
 * A duration as a person reads it, in its largest sensible units: `45 s`, `3 min`,
 * `2 h 5 min`, `12 days`. Every message that states an age or a wait uses it (resume
 * warnings, lock messages, the CLI, the viewer), so none prints `74465 minute(s)`.
 */
export function formatDuration(ms: number): string {
  const s = Math.round(Math.abs(ms) / 1000);
  if (s < 60) return `${s} s`;
  const m = Math.round(s / 60);
  if (m < 60) return `${m} min`;
  const hours = Math.floor(m / 60);
  if (hours < 48) return m % 60 ? `${hours} h ${m % 60} min` : `${hours} h`;
  const days = Math.round(hours / 24);
  return `${days} days`;
}
