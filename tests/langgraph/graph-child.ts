// The child process of the LangGraph crash test: examples/langgraph.ts's command line.
import { main } from '../../examples/langgraph.js';

await main(process.argv.slice(2));
