import { moveManyOf, moveOf, type MovableStorage } from '../../contract/move.js';
import { listAll, type StorageAdapter } from '../../contract/storage.js';

const keysUnder = async (adapter: StorageAdapter, prefix: string): Promise<string[]> => (await listAll(adapter, prefix)).map((e) => e.key);
import { equal, equalJson, ok, rejects, sameBytes, utf8 } from './check.js';
import type { SuiteContext } from './context.js';

/** The store's move; each test of a store that does not declare the capability passes at once (nothing to check). */
const movable = (adapter: StorageAdapter): MovableStorage['move'] | undefined => moveOf(adapter);

/** The store's `moveMany`, when it offers one beside its move. */
const movableMany = (adapter: StorageAdapter): MovableStorage['moveMany'] | undefined => moveManyOf(adapter);

/** The optional `move` capability (contract/move.ts), checked on stores that declare it. */
export function moveTests(ctx: SuiteContext): void {
  ctx.group('move', () => {
    ctx.test('move: move() is present when capabilities.move is declared', async (adapter) => {
      if (adapter.capabilities.move === true)
        ok(typeof (adapter as Partial<MovableStorage>).move === 'function', 'capabilities.move without move()');
      else equal(movable(adapter), undefined, 'a store that does not declare move offers none');
    });

    ctx.test('move: the value and its bytes under the new key, none under the old', async (adapter) => {
      const move = movable(adapter);
      if (!move) return;
      const bytes = Uint8Array.from({ length: 300 }, (_, i) => (i * 7) & 0xff);
      await adapter.put('mv/a', bytes);
      await adapter.put('mv/other', utf8('left alone'));
      equal(await move('mv/a', 'mv/a.moved'), true, 'move of a stored key');
      equal(await adapter.get('mv/a'), undefined, 'the old key after a move');
      sameBytes((await adapter.get('mv/a.moved'))?.bytes, bytes, 'the new key after a move');
      equalJson(await keysUnder(adapter, 'mv/'), ['mv/a.moved', 'mv/other'], 'listing after a move');
      sameBytes((await adapter.get('mv/other'))?.bytes, utf8('left alone'), 'another key');
    });

    ctx.test('move: the new key has a version a conditional put and delete take', async (adapter) => {
      const move = movable(adapter);
      if (!move) return;
      await adapter.put('mv/v', utf8('one'));
      await move('mv/v', 'mv/w');
      const moved = await adapter.get('mv/w');
      ok(moved, 'the moved value');
      const { version } = await adapter.put('mv/w', utf8('two'), { ifVersion: moved.version });
      equal(await adapter.delete('mv/w', { ifVersion: version }), true, 'delete of the replaced value by its version');
    });

    ctx.test('move: an absent source answers false and changes nothing', async (adapter) => {
      const move = movable(adapter);
      if (!move) return;
      await adapter.put('mv/there', utf8('x'));
      equal(await move('mv/absent', 'mv/target'), false, 'move of an absent key');
      equal(await adapter.get('mv/target'), undefined, 'the target after a move of an absent key');
      equalJson(await keysUnder(adapter, 'mv/'), ['mv/there'], 'listing after a move of an absent key');
    });

    ctx.test('move: a target that holds a value rejects with checkpoint_conflict and changes neither key', async (adapter) => {
      const move = movable(adapter);
      if (!move) return;
      const from = await adapter.put('mv/from', utf8('source'));
      const to = await adapter.put('mv/to', utf8('target'));
      await rejects(() => move('mv/from', 'mv/to'), 'checkpoint_conflict', 'move onto a stored key');
      const [a, b] = await Promise.all([adapter.get('mv/from'), adapter.get('mv/to')]);
      sameBytes(a?.bytes, utf8('source'), 'the source after a refused move');
      equal(a?.version, from.version, 'the source version after a refused move');
      sameBytes(b?.bytes, utf8('target'), 'the target after a refused move');
      equal(b?.version, to.version, 'the target version after a refused move');
    });

    ctx.test('move: the same key twice, or a malformed key, is refused before anything changes', async (adapter) => {
      const move = movable(adapter);
      if (!move) return;
      await adapter.put('mv/same', utf8('x'));
      await rejects(() => move('mv/same', 'mv/same'), 'checkpoint_config_invalid', 'move of a key onto itself');
      await rejects(() => move('mv/same', '../escape'), 'checkpoint_key_invalid', 'move to a malformed key');
      sameBytes((await adapter.get('mv/same'))?.bytes, utf8('x'), 'the key after refused moves');
    });

    ctx.test('move: of concurrent moves of one key to different targets, exactly one moves it', async (adapter) => {
      const move = movable(adapter);
      if (!move) return;
      await adapter.put('mv/race', utf8('once'));
      const targets = Array.from({ length: ctx.concurrency }, (_, i) => `mv/race.${i}`);
      const moved = await Promise.all(targets.map((to) => move('mv/race', to)));
      equal(moved.filter(Boolean).length, 1, 'moves that answered true');
      const listed = await keysUnder(adapter, 'mv/');
      equalJson(listed, [targets[moved.indexOf(true)]], 'the one key holding the value');
    });
    ctx.test('moveMany: each move as move makes it, one answer per move (false: nothing changed for it)', async (adapter) => {
      const moveMany = movableMany(adapter);
      if (!moveMany) return;
      await adapter.put('mm/a', utf8('a'));
      await adapter.put('mm/b', utf8('b'));
      const taken = await adapter.put('mm/taken', utf8('held'));
      const c = await adapter.put('mm/c', utf8('c'));
      const answers = await moveMany([
        { from: 'mm/a', to: 'mm/a.moved' },
        { from: 'mm/absent', to: 'mm/absent.moved' },
        { from: 'mm/b', to: 'mm/b.moved' },
      ]);
      equalJson(answers, [true, false, true], 'the answers');
      equalJson(await moveMany([{ from: 'mm/c', to: 'mm/taken' }]), [false], 'a move onto a stored key');
      equalJson(await keysUnder(adapter, 'mm/'), ['mm/a.moved', 'mm/b.moved', 'mm/c', 'mm/taken'], 'listing after moveMany');
      sameBytes((await adapter.get('mm/a.moved'))?.bytes, utf8('a'), 'a moved value');
      sameBytes((await adapter.get('mm/b.moved'))?.bytes, utf8('b'), 'another moved value');
      const [source, target] = await Promise.all([adapter.get('mm/c'), adapter.get('mm/taken')]);
      equal(source?.version, c.version, 'the source of a move onto a stored key, unchanged');
      equal(target?.version, taken.version, 'the stored key a move was refused onto, unchanged');
    });

    ctx.test('moveMany: a key named twice, or a malformed move, is refused before anything changes', async (adapter) => {
      const moveMany = movableMany(adapter);
      if (!moveMany) return;
      await adapter.put('mm/x', utf8('x'));
      await rejects(
        () =>
          moveMany([
            { from: 'mm/x', to: 'mm/y' },
            { from: 'mm/y', to: 'mm/z' },
          ]),
        'checkpoint_config_invalid',
        'a key named by two moves',
      );
      await rejects(() => moveMany([{ from: 'mm/x', to: '../escape' }]), 'checkpoint_key_invalid', 'a move to a malformed key');
      equalJson(await keysUnder(adapter, 'mm/'), ['mm/x'], 'listing after refused moves');
    });

    ctx.test('moveMany: of concurrent calls moving one key to different targets, exactly one moves it', async (adapter) => {
      const moveMany = movableMany(adapter);
      if (!moveMany) return;
      await adapter.put('mm/race', utf8('once'));
      const targets = Array.from({ length: ctx.concurrency }, (_, i) => `mm/race.${i}`);
      const moved = (await Promise.all(targets.map((to) => moveMany([{ from: 'mm/race', to }])))).map(([answer]) => answer);
      equal(moved.filter(Boolean).length, 1, 'calls that answered true');
      equalJson(await keysUnder(adapter, 'mm/'), [targets[moved.indexOf(true)]], 'the one key holding the value');
    });
  });
}
