/**
 * The viewer's LangGraph checkpoint names its children: the fork point links its three
 * branches (loop, update, replay), a leaf none. Read through the viewer's own API.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { systemClock } from 'savepoint';
import { langGraphProfile } from 'savepoint/langgraph';
import { startUiServer, type UiServer } from '../../src/ui/server.js';
import { forkedStore } from '../support/forked-thread.js';

const servers: UiServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.close();
});

const api = async (ui: UiServer, path: string): Promise<Record<string, unknown>> => {
  const url = new URL(ui.url);
  return (await (await fetch(`${url.origin}${url.pathname.replace(/\/$/, '')}/api/${path}`)).json()) as Record<string, unknown>;
};

interface Child {
  checkpointId: string;
  sequence: number;
  source: string;
}

describe("the viewer: a LangGraph checkpoint's children", () => {
  it('the fork point lists its branches oldest first, each a checkpoint of the thread; the newest has none', async () => {
    const { storage, afterA } = await forkedStore();
    const ui = await startUiServer({ storage, profile: langGraphProfile, clock: systemClock });
    servers.push(ui);
    const fork = (await api(ui, `runs/t/snapshots/${afterA}`)).langgraph as { children: Child[] };
    expect(fork.children).toHaveLength(3);
    expect(fork.children.slice(0, 2).map((c) => c.source)).toEqual(['loop', 'update']);
    const sequences = fork.children.map((c) => c.sequence);
    expect([...sequences].sort((a, b) => a - b)).toEqual(sequences);
    for (const c of fork.children) {
      const child = (await api(ui, `runs/t/snapshots/${c.checkpointId}`)).langgraph as { parentCheckpointId: string };
      expect(child.parentCheckpointId).toBe(afterA);
    }
    const newest = (await api(ui, 'runs/t/snapshots/latest')).langgraph as { children: Child[] };
    expect(newest.children).toEqual([]);
  });
});
