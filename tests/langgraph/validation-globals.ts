import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';

// LangGraph's validation suite calls describe/it/expect as globals (Jest style); this
// project's vitest config does not enable globals, so the suite's files get them here.
Object.assign(globalThis, { describe, it, expect, beforeAll, afterAll, beforeEach, afterEach });
