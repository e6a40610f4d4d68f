/**
 * `savepoint/langgraph`: `SavepointSaver`, a LangGraph.js checkpointer over any savepoint
 * storage adapter, and `langGraphProfile` for retention, verify and the CLI on its stores.
 * Needs the optional peers `@langchain/langgraph-checkpoint` and `@langchain/core`.
 *
 * @module savepoint/langgraph
 */
export * from '../langgraph/index.js';
