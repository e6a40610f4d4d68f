import { createHook } from 'node:async_hooks';

/** Promises made while `call` runs to its end (its own and what it awaits), counted by an async hook. */
export async function promisesMadeBy(call: () => Promise<unknown>): Promise<number> {
  let made = 0;
  const hook = createHook({
    init(_id, type) {
      if (type === 'PROMISE') made++;
    },
  }).enable();
  try {
    await call();
  } finally {
    hook.disable();
  }
  return made;
}
