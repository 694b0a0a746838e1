// esbuild bundles the lifecycle diagram as text (status/bundle.ts: loader ".svg": "text").
declare module "*.svg" {
  const text: string;
  export default text;
}

// esbuild bundles the style sheet into app.css beside the script.
declare module "*.css";
