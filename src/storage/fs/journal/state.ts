import type { RootDir } from '../dir.js';
import type { FsIo } from '../fd.js';
import { backgroundLane, type BackgroundLane } from '../lane.js';
import type { LockTiming } from '../lock.js';
import { createTempPool, type TempPool } from '../temp-pool.js';
import type { KeptToken } from '../lock.js';
import type { Held, LastSeen } from './hold.js';
import { journalLeaseMs } from './lease.js';
import type { ApplyItem, Pending, Planned } from './planned.js';
import type { View } from './view.js';

/** What a journal needs from its store. */
export interface JournalDeps {
  readonly root: RootDir;
  readonly timing: LockTiming;
  readonly fileMode: number;
  readonly io: FsIo;
  /** Checkpoint (fsync applied files, empty the journal) once it grows past this. */
  readonly checkpointBytes: number;
  /** How long the journal lock is kept after a commit (test seam; 20 ms). */
  readonly lingerMs?: number;
  /** How long applies wait for a pause in the commits (default 3 ms; 0: apply at once). */
  readonly applyQuietMs?: number;
  /** At most how long after a group's commit its apply starts while commits keep coming (default 40 ms). */
  readonly applyLagMs?: number;
}

/** Largest preallocation: past it, a big `journalCheckpointBytes` grows the file as records come. */
const MAX_PREALLOC = 64 << 20;

/**
 * Everything one journal knows: its store's settings and what it holds between calls. One
 * per `createJournal`; every step of the journal (commit, apply, checkpoint, recover, view,
 * the lock's hold) is a function over it.
 */
export interface JournalState {
  readonly root: RootDir;
  readonly timing: LockTiming;
  /** Every file-system call goes through it (the tests' seam). */
  readonly io: FsIo;
  /** Mode of the files the journal creates. */
  readonly fileMode: number;
  /** Rotate to the other journal file once the one commits go to grows past this. */
  readonly checkpointBytes: number;
  /** Size each journal file is preallocated to (written zeros). */
  readonly preallocBytes: number;
  /**
   * How long the journal lock lingers after a commit. Taking and releasing it costs eight
   * file-system calls — four times a commit's own two — and letting it go waits for the
   * files to be applied, so a holder keeps it for lingerMs after a commit (a run's next
   * checkpoint, or a graph's next superstep, usually comes sooner: at 2 ms the lock was let
   * go and taken again between most checkpoints of a run whose steps do some work) and at
   * most maxHoldMs in all, well inside the stale bound. Other processes wait for it as for
   * any lock: a hand-over between processes costs them up to lingerMs.
   */
  readonly lingerMs: number;
  /** At most how long one hold of the lock lasts (see lingerMs). */
  readonly maxHoldMs: number;
  /**
   * How long no commit must have come before applies start. Applies wait for a lull in the
   * commits: an apply's file creations, writes and renames running beside a commit's O_DSYNC
   * write slowed that write two- to threefold (the device flushes what they dirtied with
   * it) — a LangGraph thread's chain of puts, each waiting for the one before, paid it at
   * every superstep. So the groups committed wait until no commit has come for applyQuietMs,
   * and at most applyLagMs after the first of them was committed (how old the files a reader
   * that is not savepoint sees can be while commits keep coming); waiting merges more groups
   * too (a run's latest.json landed once per more checkpoints). `flush()`, letting the lock
   * go and a commit that waits for its files apply at once. Measured in docs/performance.md.
   */
  readonly applyQuietMs: number;
  /** At most how long applies wait after the first group waiting was committed (see applyQuietMs). */
  readonly applyLagMs: number;
  /** Two of the thread pool's four threads at most for background work (with every other journaled store of the process): a commit's write finds one free. */
  readonly lane: BackgroundLane;
  /** Temp files made ahead, whose inodes give puts their versions at the commit point. */
  readonly pool: TempPool;
  /** The background lane's calls: the directories a put's apply makes (makeDir) wait their turn as its other calls. */
  readonly laneIo: FsIo;

  /** The two journal files' descriptors, once opened. */
  readonly fds: [Promise<number> | undefined, Promise<number> | undefined];
  /** The journal files' descriptors once open (a commit writes without awaiting `fds`). */
  readonly opened: [number | undefined, number | undefined];
  /** The inode numbers of the journal files open here: a file replaced since (swapJournalFiles) is opened again. */
  readonly inos: [bigint | undefined, bigint | undefined];
  /** The journal lock's lease (lease.ts). */
  readonly leaseMs: number;
  /** When this process's lease of the journal lock began (before the link or renewal that set it), while it holds the lock. */
  leaseFrom: number | undefined;
  /** The timer renewing the lease while the lock is held. */
  renewal: ReturnType<typeof setInterval> | undefined;
  /**
   * How long a hold lasts at most once another process waits for the lock (queue.ts): the
   * holder lets it go after this much and queues behind the waiters.
   */
  readonly sliceMs: number;
  /** When this hold last looked for waiters (performance.now()). */
  lastWaitCheck: number;
  /** Set while others wait for the lock: this process queues (tickets) instead of taking it at once. */
  contended: boolean;
  /** Set when the lock was taken from a holder whose lease ran out while it may still run: the journal files are replaced after the replay. */
  swapAfterRecovery: boolean;
  /** Set after a failure to apply, checkpoint or void: the next commit (or flush, or letting the lock go) replays both files first. */
  /** A replay owed (replay-owed.ts) was found when the lock was taken: its file goes once the replay is done. */
  owedReplay: boolean;
  needRecovery: boolean;
  /** Batches waiting for the next group commit. */
  readonly queue: Pending[];
  /** The commit loop under way (pump), while batches are queued or committing. */
  running: Promise<void> | undefined;
  /** This process's acknowledged operations whose files are not applied yet: the last one of each key. */
  readonly pending: Map<string, Planned>;
  /**
   * Keys whose file a move's apply renamed away, its directory not fsynced since (a checkpoint
   * fsyncs it): a put landing there fsyncs the directory first, or a power cut could keep the
   * new file and lose the rename — and with it the moved bytes, which no record holds.
   */
  readonly movedAway: Set<string>;
  /** Committed groups waiting to be applied, in commit order; a directory cache to close once the groups before it are applied. */
  readonly toApply: ApplyItem[];
  /** The apply loop under way (runApplies), if any. */
  applying: Promise<void> | undefined;
  /** Whether futimes times read back exactly (probed once): then versions are known at the commit point. */
  exactTimes: Promise<boolean> | undefined;
  /** The probe's answer once it is in (no await on the commit path after that). */
  exactNow: boolean | undefined;
  /**
   * Kept descriptors: the file each key holds now, as this hold of the lock applied it — its
   * temp file's descriptor, left open after the rename — so the journal checkpoint fsyncs it
   * without an open and a close (two of a history file's nine trips through the thread
   * pool). Only while nothing else can have replaced the file: across a release of the
   * journal lock only if the next hold finds the journal as this process left it (no one
   * else committed: see keptVerified), never across a replay (it may rewrite files), and this
   * process's own later put or delete of the key closes the older one. At most MAX_KEPT
   * (kept.ts); past that a file is closed as before and fsynced by path.
   */
  readonly kept: Map<string, number>;
  /**
   * Whether this hold may use descriptors kept from an earlier one: set once placeRecord has
   * found the journal as the earlier hold left it — every other journaled writer commits
   * through it, so none replaced a file in between. Until then a checkpoint drops them.
   */
  keptVerified: boolean;
  /** The temp file our lock is a link of, kept between holds while young (one link(2) takes the lock). */
  spare: KeptToken | undefined;
  /** Where the journal ended and its epoch when we last let the lock go (checked, not trusted, on the next hold). */
  lastSeen: LastSeen | undefined;
  /** This process's hold of the journal lock, while it lasts. */
  held: Held | undefined;
  /** Set while a caller runs under the lock (locked): the linger timer does not let it go then. */
  busy: boolean;
  /** The timer that lets the lock go once no commit came for lingerMs. */
  linger: ReturnType<typeof setTimeout> | undefined;
  /** A release under way (the linger timer's): names through the root's descriptor are still in use. */
  releasing: Promise<void> | undefined;
  /**
   * Whether the journal lock is ours: from its taking until its release renames it away.
   * Not `held || releasing`: once renamed away (the release's first call) another instance
   * may take the lock and commit before the release is over, and reads must see that.
   */
  lockOurs: boolean;
  /** When the last commit's record was written (performance.now()). */
  lastCommitAt: number;
  /** Callers waiting for the applies to be done (drain): no lull then. */
  hurrying: number;
  /** Ends the lull under way at once. */
  hurry: (() => void) | undefined;
  /** Closes of dropped descriptors under way (close() waits for them). */
  dropping: Promise<unknown>;
  /** What each journal file says, read incrementally for reads while another instance holds the lock. */
  readonly views: [View | undefined, View | undefined];
}

/** A journal's state as it starts: nothing opened, held, pending or kept. */
export function createJournalState(deps: JournalDeps): JournalState {
  const { root, timing, io } = deps;
  const lane = backgroundLane();
  // Refills go ahead of applies in the lane: a commit that finds the pool empty makes its temp file on its own path (measured under 8 runs: 47 % of takes before, 29 % after).
  const pool = createTempPool(root, io, timing, deps.fileMode, lane.first);
  return {
    root,
    timing,
    io,
    fileMode: deps.fileMode,
    checkpointBytes: deps.checkpointBytes,
    preallocBytes: Math.min(MAX_PREALLOC, Math.ceil((deps.checkpointBytes + 65536) / 4096) * 4096),
    lingerMs: deps.lingerMs ?? 20,
    maxHoldMs: Math.min(1000, timing.staleAfterMs / 4),
    applyQuietMs: deps.applyQuietMs ?? 3,
    applyLagMs: deps.applyLagMs ?? 40,
    lane,
    pool,
    laneIo: {
      ...io,
      open: (path, flags, mode) => lane(() => io.open(path, flags, mode)),
      mkdir: (path) => lane(() => io.mkdir(path)),
      close: (fd) => lane(() => io.close(fd)),
    },
    fds: [undefined, undefined],
    opened: [undefined, undefined],
    inos: [undefined, undefined],
    leaseMs: journalLeaseMs(timing),
    leaseFrom: undefined,
    renewal: undefined,
    sliceMs: Math.min(50, timing.staleAfterMs / 8),
    lastWaitCheck: 0,
    contended: false,
    swapAfterRecovery: false,
    needRecovery: false,
    owedReplay: false,
    queue: [],
    running: undefined,
    pending: new Map(),
    movedAway: new Set(),
    toApply: [],
    applying: undefined,
    exactTimes: undefined,
    exactNow: undefined,
    kept: new Map(),
    keptVerified: true,
    spare: undefined,
    lastSeen: undefined,
    held: undefined,
    busy: false,
    linger: undefined,
    releasing: undefined,
    lockOurs: false,
    lastCommitAt: 0,
    hurrying: 0,
    hurry: undefined,
    dropping: Promise.resolve(),
    views: [undefined, undefined],
  };
}
