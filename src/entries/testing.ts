export * from '../testing/index.js';
