import { h } from './dom.js';

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object';

function leaf(value: unknown): HTMLElement {
  const kind = value === null ? 'null' : typeof value;
  return h('span', { class: `v-${kind}` }, JSON.stringify(value));
}

/**
 * A JSON value as a collapsible tree of native <details> elements (keyboard and screen
 * reader friendly by default). Children are built when a node is first opened, so a
 * large payload costs only what is looked at. Nodes above `openDepth` start open.
 */
export function jsonTree(value: unknown, label = '', depth = 0, openDepth = 2): HTMLElement {
  const name = label ? h('span', { class: 'key' }, `${label}: `) : null;
  if (!isObject(value)) return h('div', { class: 'node leaf' }, name, leaf(value));
  const entries: [string, unknown][] = Array.isArray(value) ? value.map((v, i) => [String(i), v]) : Object.entries(value);
  const brief = Array.isArray(value) ? `[${entries.length}]` : `{${entries.length}}`;
  const details = h('details', { class: 'node' }, h('summary', {}, name, h('span', { class: 'brief' }, brief)));
  let built = false;
  const build = (): void => {
    if (built) return;
    built = true;
    for (const [k, v] of entries) details.append(jsonTree(v, k, depth + 1, openDepth));
  };
  details.addEventListener('toggle', () => details.open && build());
  if (depth < openDepth) {
    details.open = true;
    build();
  }
  return details;
}
