import type { CliIo } from './io.js';

/**
 * A one-line progress bar on stderr, shown only on a terminal and only when there is
 * enough work to be worth it, so scripts and logs never see carriage returns.
 */
export function progressBar(io: CliIo, total: number, label: string, threshold = 50): { tick(): void; done(): void } {
  const show = io.stderr.isTTY === true && total >= threshold;
  let count = 0;
  let lastDrawn = -1;
  const draw = (): void => {
    const width = 30;
    const filled = Math.round((count / total) * width);
    if (filled === lastDrawn && count !== total) return;
    lastDrawn = filled;
    io.stderr.write(`\r${label} [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${count}/${total}`);
  };
  return {
    tick() {
      count++;
      if (show) draw();
    },
    done() {
      if (show) io.stderr.write(`\r${' '.repeat(label.length + 45)}\r`);
    },
  };
}
