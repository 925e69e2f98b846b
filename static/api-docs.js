// Swagger UI on the app's own OpenAPI schema; no request leaves this server (no online validator badge).
// Its markup is made accessible (axe-core finds no violation, tests/e2e/test_docs.py): the page's <h1> and
// <main> are in api-docs.html, the colours in api-docs.css, and the markup's own gaps are filled here.

// An operation's path is a link inside the button that expands the operation: a focusable control inside
// another. Rendered without its href it is plain text; deep links still work, as the address follows what
// is expanded (deepLinking).
const PathsWithoutLinks = () => ({
  wrapComponents: {
    DeepLink: (Original, system) => (props) => system.React.createElement(Original, { ...props, enabled: false }),
  },
});

// Attributes Swagger UI's markup lacks: its title (an <h1> followed by <h3> tags) becomes a level-2 heading under
// the page's own <h1>, so heading levels go down one at a time; code blocks, which scroll, can be reached from
// the keyboard; form fields, copy buttons and each operation's responses table get names. Rendering replaces
// elements, so the attributes are set again on every change. A value may be a function of the element.
const MISSING_ATTRIBUTES = [
  [".info .title", { role: "heading", "aria-level": "2" }],
  [".highlight-code > .microlight", { tabindex: "0" }],
  ["textarea.body-param__text", { "aria-label": "request body" }],
  ["tr[data-param-name] input", { "aria-label": (input) => input.closest("tr").dataset.paramName }],
  [".copy-to-clipboard > button", { "aria-label": "copy to clipboard" }],
  [".responses-table[role=region]", { "aria-label": (table) => `responses of ${operationOf(table)}` }],
];

// "POST /api/translate": the operation an element belongs to.
function operationOf(element) {
  const block = element.closest(".opblock");
  const method = block?.querySelector(".opblock-summary-method")?.textContent ?? "";
  const path = block?.querySelector("[data-path]")?.dataset.path ?? "";
  return `${method} ${path}`.trim() || "this operation";
}

function addMissingAttributes(root) {
  for (const [selector, attributes] of MISSING_ATTRIBUTES) {
    for (const element of root.querySelectorAll(selector)) {
      for (const [name, value] of Object.entries(attributes)) {
        if (!element.hasAttribute(name)) {
          element.setAttribute(name, typeof value === "function" ? value(element) : value);
        }
      }
    }
  }
}

window.addEventListener("DOMContentLoaded", () => {
  const root = document.getElementById("swagger-ui");
  new MutationObserver(() => addMissingAttributes(root)).observe(root, { childList: true, subtree: true });
  window.ui = SwaggerUIBundle({
    url: "/openapi.json",
    dom_id: "#swagger-ui",
    presets: [SwaggerUIBundle.presets.apis, SwaggerUIBundle.SwaggerUIStandalonePreset],
    plugins: [PathsWithoutLinks],
    layout: "BaseLayout",
    deepLinking: true,
    showExtensions: true,
    showCommonExtensions: true,
    validatorUrl: null,
    syntaxHighlight: { theme: "obsidian" }, // the default theme's numbers have 3.4:1 contrast on its background
  });
});
