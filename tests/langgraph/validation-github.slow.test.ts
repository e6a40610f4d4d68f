import './validation-globals.js';
import { deltaChannelHistoryTests, validate, type CheckpointSaverTestInitializer } from '@langchain/langgraph-checkpoint-validation';
import { githubStorage, type GitHubStorage } from 'savepoint/github';
import { SavepointSaver } from 'savepoint/langgraph';
import { startGitHubEmulator, type GitHubEmulator } from 'savepoint/testing';

const TOKEN = 'ghp_langgraphVALIDATIONtoken0123456789abcd';

// LangGraph's validation suite, in full and with its opt-in getDeltaChannelHistory suite, against githubStorage on the GitHub emulator
// (a real HTTP server on 127.0.0.1): a fresh repository per checkpointer.
const emulators = new Map<SavepointSaver, GitHubEmulator>();
const onGitHub: CheckpointSaverTestInitializer<SavepointSaver> = {
  checkpointerName: 'savepoint SavepointSaver on githubStorage',
  async createCheckpointer() {
    // Unpaced writes: GitHub asks for a second between them, the emulator does not need it.
    const gh = await startGitHubEmulator({ token: TOKEN, secondaryLimit: false });
    const storage: GitHubStorage = githubStorage({
      owner: gh.owner,
      repo: gh.repo,
      token: TOKEN,
      baseUrl: gh.url,
      requestTimeoutMs: 10_000,
      minWriteIntervalMs: 0,
      emergencyQueue: 'memory',
    });
    const saver = new SavepointSaver({ storage });
    emulators.set(saver, gh);
    return saver;
  },
  async destroyCheckpointer(saver) {
    await saver.storage.close();
    await emulators.get(saver)?.close();
    emulators.delete(saver);
  },
};
validate(onGitHub);
deltaChannelHistoryTests(onGitHub);
