export * from '../profiles/handoff-markdown/index.js';
