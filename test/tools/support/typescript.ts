// TypeScript's compiler API over in-memory sources: one process, the lib files parsed once.
import ts from "typescript";

const BASE: ts.CompilerOptions = {
  lib: ["lib.esnext.full.d.ts"], // ESNext and the DOM
  types: [],
  target: ts.ScriptTarget.ES2022,
  module: ts.ModuleKind.ESNext,
  moduleResolution: ts.ModuleResolutionKind.Bundler,
  noEmit: true,
  skipLibCheck: true,
};
const ROOT = `${process.cwd()}/.in-memory/`;

const parsed = new Map<string, ts.SourceFile | undefined>();

function programOf(files: Record<string, string>, options: ts.CompilerOptions): ts.Program {
  const host = ts.createCompilerHost(BASE);
  const { getSourceFile, fileExists, readFile } = host;
  const own = (name: string) => (name.startsWith(ROOT) ? files[name.slice(ROOT.length)] : undefined);
  host.fileExists = (name) => own(name) !== undefined || fileExists(name);
  host.readFile = (name) => own(name) ?? readFile(name);
  host.getSourceFile = (name, language, ...rest) => {
    const text = own(name);
    if (text !== undefined) return ts.createSourceFile(name, text, language);
    if (!parsed.has(name)) parsed.set(name, getSourceFile(name, language, ...rest));
    return parsed.get(name);
  };
  const roots = Object.keys(files).map((name) => ROOT + name);
  return ts.createProgram(roots, { ...BASE, ...options }, host);
}

/**
 * Type-checks the sources (file name → text) as one program under `--strict`, bare imports
 * resolved through `paths` (module name → its package directory). The errors, formatted.
 */
export function strictErrors(files: Record<string, string>, paths: Record<string, string> = {}): string[] {
  const program = programOf(files, {
    strict: true,
    paths: Object.fromEntries(Object.entries(paths).map(([name, dir]) => [name, [dir]])),
  });
  return ts.getPreEmitDiagnostics(program).map((d) => {
    const where = d.file && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start) : undefined;
    const at = d.file
      ? `${d.file.fileName.replace(ROOT, "")}${where ? `(${where.line + 1},${where.character + 1})` : ""}: `
      : "";
    return `${at}${ts.flattenDiagnosticMessageText(d.messageText, "\n")}`;
  });
}

/** Every name TypeScript's lib (ESNext and the DOM) declares in the global scope: types, values, namespaces. */
export function libGlobals(): Set<string> {
  const program = programOf({ "empty.ts": "export {};" }, {});
  const scope = program
    .getTypeChecker()
    .getSymbolsInScope(
      program.getSourceFile(`${ROOT}empty.ts`)!,
      ts.SymbolFlags.Type | ts.SymbolFlags.Value | ts.SymbolFlags.Namespace,
    );
  return new Set(scope.map((symbol) => symbol.name));
}
