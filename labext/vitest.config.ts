import { readFileSync } from "node:fs";
import { defineConfig } from "vitest/config";

export default defineConfig({
  // SVG files are imported as their text, as esbuild's text loader does in the build
  plugins: [
    {
      name: "svg-as-text",
      enforce: "pre",
      load: (id: string) =>
        id.endsWith(".svg") ? `export default ${JSON.stringify(readFileSync(id, "utf8"))};` : null,
    },
  ],
  test: { environment: "happy-dom", include: ["test/**/*.spec.ts"] },
});
