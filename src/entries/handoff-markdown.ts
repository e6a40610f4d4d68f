export * from '../handoff-markdown/index.js';
