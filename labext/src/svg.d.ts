// SVG files imported as their text (esbuild's text loader).
declare module "*.svg" {
  const text: string;
  export default text;
}
