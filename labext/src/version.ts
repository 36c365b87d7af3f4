// The one place the front end learns its version: package.json's `version`, which a pytest checks
// against pagelab.__version__ (one version across the boundary). A named import, so the bundler
// keeps that one field and leaves the rest of package.json out of the bundle.
import { version } from "../package.json";

export const VERSION: string = version;
