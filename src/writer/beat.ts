import { toCheckpointError } from '../contract/errors.js';
import { parseJson } from '../codec/canonical-json.js';
import { settleBeat } from './heartbeat.js';
import { accept } from './queue.js';
import { failure, type WriterState } from './state.js';
import { sameMaterial } from './triggers.js';

/** One heartbeat: stores the last state again (or the beat payload made from it) while the run is active. */
export function onBeat<P>(state: WriterState<P>): void {
  const { runId, clock, activeStatus, heartbeatSource, heartbeatPayload, beatPayload } = state.config;
  const { heartbeat, lastInput } = state;
  state.emitter.emit('heartbeat', { runId, at: clock.now() });
  if (!lastInput || lastInput.status !== activeStatus || heartbeatSource === undefined) return;
  // Nothing new since the newest snapshot, and the profile stores no copy of it on a timer.
  if (state.config.skipUnchangedBeats && !heartbeatPayload && state.head !== undefined && sameMaterial(state.head.state, lastInput)) {
    heartbeat.reset(true);
    return;
  }
  let payload: P;
  try {
    const last = parseJson(lastInput.payloadText, 'payload') as P;
    payload = beatPayload ? beatPayload(last) : last;
  } catch (raw) {
    failure(state, toCheckpointError(raw, 'checkpoint_schema_invalid', 'heartbeatPayload failed'), 'heartbeat');
    heartbeat.reset(true);
    return;
  }
  void accept(state, { source: heartbeatSource, status: lastInput.status, payload }, 'heartbeat').then((r) => {
    settleBeat(heartbeatPayload, r, payload, (raw) =>
      failure(state, toCheckpointError(raw, 'checkpoint_config_invalid', 'heartbeatPayload.settled failed'), 'heartbeat'),
    );
    // A failed beat is reported through `error`; keep beating so the state is tried again.
    if (!r.ok) heartbeat.reset(state.lastInput?.status === activeStatus);
  });
}
