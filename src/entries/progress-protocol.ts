export * from '../progress-protocol/index.js';
