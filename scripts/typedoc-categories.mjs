// A TypeDoc plugin: groups the API reference by concept (Writing, Resuming, Retention,
// Storage, Profiles, Testing, Model) from the folder (or contract file) each declaration lives in, so no source
// file needs a @category tag and a new export lands in the right group by itself.
import { Comment, CommentTag, Converter, ReflectionKind } from 'typedoc';

const BY_FOLDER = [
  ['/src/writer/', 'Writing'],
  ['/src/resume/', 'Resuming'],
  ['/src/retention/', 'Retention'],
  ['/src/storage/', 'Storage'],
  ['/src/contract/synchronous-storage', 'Storage'],
  ['/src/contract/buffered-storage', 'Storage'],
  ['/src/contract/storage', 'Storage'],
  ['/src/profiles/', 'Profiles'],
  ['/src/testing/', 'Testing'],
  ['/src/langgraph/', 'LangGraph'],
  ['/src/cli/', 'CLI'],
  ['/src/contract/profile', 'Profiles'],
  ['/src/contract/layout', 'Profiles'],
  ['/src/contract/resume-rule', 'Resuming'],
  ['/src/contract/retention', 'Retention'],
  ['/src/contract/', 'Model'],
  ['/src/snapshot-io/', 'Model'],
  ['/src/codec/', 'Model'],
];

/** @param {import('typedoc').Application} app */
export function load(app) {
  app.converter.on(Converter.EVENT_CREATE_DECLARATION, (context, reflection) => {
    // Only top-level exports of a module are grouped; members keep their parent's place.
    if (!reflection.parent || !reflection.parent.kindOf(ReflectionKind.Module | ReflectionKind.Project)) return;
    const symbol = context.getSymbolFromReflection(reflection);
    const file = symbol?.declarations?.[0]?.getSourceFile().fileName.replace(/\\/g, '/');
    const category = file && BY_FOLDER.find(([folder]) => file.includes(folder))?.[1];
    if (!category) return;
    reflection.comment ??= new Comment();
    if (reflection.comment.blockTags.some((t) => t.tag === '@category')) return;
    reflection.comment.blockTags.push(new CommentTag('@category', [{ kind: 'text', text: category }]));
  });
}
