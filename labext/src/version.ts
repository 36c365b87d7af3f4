// The one place the front end learns its version: package.json, which a pytest checks against
// pagelab.__version__ (one version across the boundary).
import pkg from "../package.json";

export const VERSION: string = pkg.version;
