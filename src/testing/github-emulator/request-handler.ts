import type { IncomingMessage, ServerResponse } from 'node:http';
import type { EmulatorServerState } from './emulator-state.js';
import { errorReply, type HandlerContext, type Reply, type Route } from './handlers.js';
import { limitReply, roll } from './rate-budget.js';
import { logExchange, openExchange, readBody, sendReply, type Exchange } from './request-exchange.js';
import { delay, injectFaults } from './request-faults.js';
import { validateRequestBody } from './schemas.js';

/**
 * Handles one request as GitHub would: authentication, routing, the body, injected faults,
 * the rate limits, request validation, then the handler; the answer is sent (or withheld, as
 * a fault says) and logged.
 */
export async function handleRequest(emu: EmulatorServerState, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const raw = await readBody(req);
  const ex = openExchange(emu, req);
  const refused = refusal(emu, req, ex, raw);
  if (refused) {
    sendReply(emu, res, refused);
    logExchange(emu, ex, refused);
    return;
  }
  const matched = ex.matched!.route; // refusal() answered 404 when no route matched
  roll(emu);
  const ctx = handlerContext(emu, req, ex);
  const faults = await injectFaults(emu, ex, matched, ctx);
  if (faults.drop) {
    logExchange(emu, ex, undefined);
    res.socket?.destroy();
    return;
  }
  let reply = faults.reply ?? limitReply(emu, ex.contentCreating) ?? answer(emu, ex, matched, ctx);
  if (faults.post?.kind === 'network-error') {
    logExchange(emu, ex, reply);
    res.socket?.destroy();
    return;
  }
  if (faults.post?.kind === 'status') reply = errorReply(faults.post.status, faults.post.message ?? 'Server Error');
  if (faults.lateMs > 0) await delay(faults.lateMs);
  if (res.destroyed || req.socket.destroyed) {
    logExchange(emu, ex, reply);
    return;
  }
  sendReply(emu, res, reply);
  logExchange(emu, ex, reply);
}

/** A request refused before it is handled: bad credentials (first, as on GitHub: failed logins do not spend the budget), no such endpoint, a body that is not JSON. Parses the body. */
function refusal(emu: EmulatorServerState, req: IncomingMessage, ex: Exchange, raw: Buffer): Reply | undefined {
  const { token } = emu.options;
  if (token !== undefined) {
    const auth = req.headers.authorization ?? '';
    if (auth !== `Bearer ${token}` && auth !== `token ${token}`) return errorReply(401, 'Bad credentials');
  }
  if (!ex.matched) return errorReply(404, 'Not Found');
  if (raw.length > 0) {
    try {
      ex.requestBody = JSON.parse(raw.toString('utf8'));
    } catch {
      return errorReply(400, 'Problems parsing JSON');
    }
  }
  return undefined;
}

function handlerContext(emu: EmulatorServerState, req: IncomingMessage, ex: Exchange): HandlerContext {
  const { options } = emu;
  return {
    state: emu.state,
    owner: emu.owner,
    repo: emu.repo,
    base: emu.base,
    accept: req.headers.accept ?? 'application/json',
    query: ex.url.searchParams,
    body: ex.requestBody,
    staleBack: undefined,
    corrupt: false,
    contentsDirectoryLimit: options.contentsDirectoryLimit ?? 1000,
    treeEntryLimit: options.treeEntryLimit ?? 100_000,
    commitFilesPerPage: options.commitFilesPerPage ?? 300,
  };
}

/** A request within the limits: it spends the budget, its body is validated, then the route answers. */
function answer(emu: EmulatorServerState, ex: Exchange, matched: Route, ctx: HandlerContext): Reply {
  emu.budget.remaining--;
  emu.budget.used++;
  if (emu.validate && ex.requestBody !== undefined) {
    const errors = validateRequestBody(matched.operation, ex.requestBody);
    if (errors.length > 0) {
      emu.schemaViolations.push({ operation: matched.operation, direction: 'request', errors });
      return errorReply(422, `Invalid request.\n\n${errors.join('\n')}`);
    }
  }
  if (ex.contentCreating) emu.created.push(emu.clock.now());
  return matched.handle(ctx);
}
