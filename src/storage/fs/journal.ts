// The journal lives in ./journal/ (one state object and a file per step); this path is kept for its importers.
export * from './journal/index.js';
