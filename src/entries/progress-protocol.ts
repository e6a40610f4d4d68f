export * from '../profiles/progress-protocol/index.js';
