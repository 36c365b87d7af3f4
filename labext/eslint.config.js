// typescript-eslint's recommended rules, with the conventions of JupyterLab's extension template;
// formatting is prettier's alone (eslint-config-prettier turns off the rules it owns).
import js from "@eslint/js";
import prettier from "eslint-config-prettier";
import { defineConfig } from "eslint/config";
import tseslint from "typescript-eslint";

export default defineConfig(
  { ignores: ["lib/", "node_modules/"] },
  js.configs.recommended,
  tseslint.configs.recommended,
  prettier,
  {
    // the template's rules, less quotes and curly: eslint-config-prettier leaves those to prettier
    rules: {
      "@typescript-eslint/naming-convention": [
        "error",
        {
          selector: "interface",
          format: ["PascalCase"],
          custom: { regex: "^I[A-Z]", match: true },
        },
      ],
      "@typescript-eslint/no-explicit-any": "off",
      "@typescript-eslint/no-namespace": "off",
      "@typescript-eslint/no-unused-vars": ["error", { args: "none", ignoreRestSiblings: true }],
      eqeqeq: "error",
      "prefer-arrow-callback": "error",
    },
  },
);
