// Builds the four MCP Apps views into self-contained HTML5 files:
//   node views/build.mjs <outdir>
// Each file carries its CSS and JS inline (no src/href to anything outside it) and must stay
// under 200 KB (hosts cap at 1 MiB; the suite asserts 200 KB). Runs on Node 18 and later:
// only fs/path/url APIs that Node 18 has. Same input, same bytes (no dates, sorted lists).
import { build } from "esbuild";
import { mkdirSync, readFileSync, writeFileSync, existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const HERE = dirname(fileURLToPath(import.meta.url));
const LIMIT = 200 * 1024;

// name -> page title; the entry is src/<name>/main.js and src/<name>/style.css.
const VIEWS = [
  ["rankings", "Rankings"],
  ["audit", "Audit"],
  ["approve", "Approve before it goes out"],
  ["client-overview", "Client overview"],
];

// zod 3.25 ships its error messages in 40 languages, all reachable from `zod/v4/locales/index.js`
// and so all bundled (145 KB minified). The views never show zod's messages to anyone and zod
// keeps English (`locales/en.js`, imported directly by zod's core), so the index becomes an
// empty module.
const zodLocalesStub = {
  name: "zod-locales-stub",
  setup(b) {
    b.onLoad({ filter: /[\\/]zod[\\/].*[\\/]locales[\\/]index\.js$/ }, () => ({
      contents: "export {};",
      loader: "js",
    }));
  },
};

function fail(message) {
  console.error(`views build: ${message}`);
  process.exit(1);
}

// The npm packages a bundle took code from, read from esbuild's metafile, as one short
// notice: name, version, licence and copyright line (MIT and Apache-2.0 ask for the notice).
function thirdPartyNotice(metafile) {
  const seen = new Map();
  for (const input of Object.keys(metafile.inputs)) {
    const m = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(input);
    if (!m || seen.has(m[1])) continue;
    const dir = join(HERE, "node_modules", m[1]);
    const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
    let copyright = "";
    const licenceFile = join(dir, "LICENSE");
    if (existsSync(licenceFile)) {
      const line = readFileSync(licenceFile, "utf8").split("\n").find((l) => /^\s*Copyright \(c\)/i.test(l));
      if (line) copyright = ", " + line.trim();
    }
    seen.set(m[1], `${pkg.name} ${pkg.version} (${pkg.license}${copyright})`);
  }
  const list = [...seen.values()].sort();
  if (list.length === 0) return "";
  return `/* Bundled npm packages, each under its licence (full texts in the packages, see views/README.md): ${list.join("; ")} */\n`;
}

async function bundle(name) {
  const src = join(HERE, "src", name);
  const js = await build({
    entryPoints: [join(src, "main.js")],
    bundle: true,
    minify: true,
    format: "iife",
    platform: "browser",
    target: ["es2020"],
    legalComments: "eof",
    charset: "utf8",
    metafile: true,
    write: false,
    logLevel: "warning",
    plugins: [zodLocalesStub],
  });
  const css = await build({
    entryPoints: [join(src, "style.css")],
    bundle: true,
    minify: true,
    target: ["chrome100", "firefox100", "safari15"],
    charset: "utf8",
    write: false,
    logLevel: "warning",
  });
  return {
    js: thirdPartyNotice(js.metafile) + js.outputFiles[0].text,
    css: css.outputFiles[0].text,
  };
}

function page(title, { js, css }) {
  // Inline script and style must not close their own element early. `<!--` alone is harmless
  // (DOMPurify has it in strings); with a `<script` after it the parser would not end the
  // script at our `</script>`.
  if (/<\/script/i.test(js)) fail(`the bundled script of "${title}" contains </script`);
  if (/<!--[\s\S]*<script/i.test(js)) fail(`the bundled script of "${title}" contains <!-- ... <script`);
  if (/<\/style/i.test(css)) fail(`the CSS of "${title}" contains </style`);
  return (
    "<!doctype html>\n" +
    '<html lang="en">\n<head>\n<meta charset="utf-8">\n' +
    '<meta name="viewport" content="width=device-width, initial-scale=1">\n' +
    '<meta name="color-scheme" content="light dark">\n' +
    `<title>${title}</title>\n<style>${css}</style>\n</head>\n<body>\n` +
    '<main id="app" aria-live="polite"><p class="muted">Waiting for the tool result…</p></main>\n' +
    `<script>${js}</script>\n</body>\n</html>\n`
  );
}

async function main() {
  const out = process.argv[2];
  if (!out) fail("usage: node views/build.mjs <outdir>");
  const outdir = resolve(out);
  mkdirSync(outdir, { recursive: true });
  let tooBig = [];
  for (const [name, title] of VIEWS) {
    const html = page(title, await bundle(name));
    if (/\s(?:src|href)\s*=\s*["']?\s*(?:https?:|\/\/)/i.test(html)) fail(`${name}.html has an external src/href`);
    const bytes = Buffer.byteLength(html, "utf8");
    writeFileSync(join(outdir, `${name}.html`), html);
    console.log(`${name}.html ${bytes} bytes (${(bytes / 1024).toFixed(1)} KB)`);
    if (bytes >= LIMIT) tooBig.push(`${name}.html is ${bytes} bytes`);
  }
  if (tooBig.length) fail(`over the ${LIMIT}-byte budget: ${tooBig.join(", ")}`);
}

main().catch((e) => fail(e && e.stack ? e.stack : String(e)));
