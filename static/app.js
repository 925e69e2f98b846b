// Keeps small controls in step (figures are drawn by figures.js).
// A lesion slider (partials/lesions.html) shows its value, and the slot boxes bounded by the same config property
// (`data-upto`: the memory size) show the slots present at that size; a box hidden is unticked.
function syncSlots() {
  document.querySelectorAll("fieldset.lesion input[type=range]").forEach((slider) => {
    slider.closest("label").querySelector(".slider-value").textContent = slider.value;
    slider.form?.querySelectorAll(`.slots[data-upto="${slider.dataset.upto}"]`).forEach((slots) => {
      slots.querySelectorAll(".slot").forEach((label) => {
        const present = Number(label.dataset.slot) < Number(slider.value);
        label.hidden = !present;
        if (!present) label.querySelector("input").checked = false;
      });
      tickLesion(slots.closest("fieldset.lesion"));  // a knock-out left with no slot asks for nothing
    });
  });
}
// A lesion kind is asked for by its box: editing one of its fields ticks the box, as the edit is typed, once every field
// the kind requires has a value, and unticks it when one is emptied; the run follows when the field is left (change).
// Runs first (capture), so the request a change sends has the box as shown.
function fieldHasValue(field) {
  return field.matches("input, select, textarea") ? field.value.trim() !== "" : field.querySelector("input:checked") !== null;
}
function tickLesion(fieldset) {
  fieldset.querySelector("input[name=lesion]").checked = [...fieldset.querySelectorAll("[data-required]")].every(fieldHasValue);
}
function tickLesionOf(event) {
  const fieldset = event.target.closest?.("fieldset.lesion");
  if (fieldset && event.target.name !== "lesion") tickLesion(fieldset);
}
document.addEventListener("input", tickLesionOf, true);
document.addEventListener("change", tickLesionOf, true);

// A successful swap elsewhere clears old errors; an error fragment swaps into #errors itself.
document.addEventListener("htmx:afterSwap", (event) => {
  if (event.detail.target.id !== "errors") document.getElementById("errors").replaceChildren();
});
// A run refused or failed leaves no older result under its error: the result shown would not be of this input.
const RESULT_BOXES = new Set(["#results", "#ff-results"]);
document.addEventListener("htmx:afterRequest", (event) => {
  const target = event.detail.elt.getAttribute("hx-target");
  if (event.detail.xhr.status >= 400 && RESULT_BOXES.has(target)) document.querySelector(target)?.replaceChildren();
});
document.addEventListener("input", (event) => {
  if (event.target.type === "range" && event.target.closest("fieldset.lesion")) syncSlots();
});
document.addEventListener("change", (event) => {
  if (event.target.id === "demo" && event.target.value) {
    document.querySelector("textarea[name=text]").value = event.target.value;
    htmx.trigger("#explore", "submit");
  }
});
document.addEventListener("DOMContentLoaded", syncSlots);
document.addEventListener("htmx:afterSettle", syncSlots);  // a page swapped into the body brings its own slider

// FF memories page: key buttons write the edits field and re-run; the key browser pages and jumps to keys.
function submitForm(id) {
  htmx.trigger(document.getElementById(id), "submit");
}
// FF memories page, a key card's "zero" / "boost ×10": adds the card's edit to the key edits and re-runs the
// input at once, on the page's text or, with none entered, on the model's example (written into the text box).
// The card's status line says so while it runs, and /ff/run answers into that line (out of band) with what the
// edits changed: the answer appears beside the button, not only under "One input" far down the page.
function ffApplyKeyEdit(button) {
  const form = document.getElementById("ff-run");
  const text = form.elements.text;
  const status = button.closest(".key-card").querySelector(".key-status");
  const edit = button.dataset.edit;
  const present = form.elements.edits.value.split(";").map((part) => part.trim()).filter(Boolean);
  const added = !present.includes(edit);
  if (added) present.push(edit);
  form.elements.edits.value = present.join("; ");
  document.querySelectorAll("#keys .key-status").forEach((line) => line.replaceChildren());
  const what = added ? `Added ${edit} to the key edits` : `${edit} is already in the key edits`;
  let on = "the text under “One input”";
  if (!text.value.trim()) {
    if (!text.dataset.example) {
      status.textContent = `${what}. Enter a text under “One input” to see what the edits change.`;
      return;
    }
    text.value = text.dataset.example;
    on = "the example text (none was entered)";
  }
  status.textContent = `${what}; running ${on}…`;
  form.elements.origin.value = status.id;
  submitForm("ff-run");
}
// FF memories page: a token character that no installed font can draw (a box, "##▯") is written as its escape
// (\uc911), the way the server writes invisible ones (app/figures/ff_views.py shown_token); the token's title
// names it. A character is missing when the canvas draws it exactly as it draws a private-use code point.
const ffGlyphChecks = new Map();  // font + character -> missing
function ffMarkMissingGlyphs() {
  const canvas = document.createElement("canvas");
  canvas.width = canvas.height = 48;
  const context = canvas.getContext("2d", { willReadFrequently: true });
  const draw = (character, font) => {
    context.clearRect(0, 0, 48, 48);
    context.font = font;
    context.textBaseline = "top";
    context.fillText(character, 4, 4);
    return context.getImageData(0, 0, 48, 48).data.join();
  };
  const missing = (character, font) => {
    const key = `${font}|${character}`;
    if (!ffGlyphChecks.has(key)) ffGlyphChecks.set(key, draw(character, font) === draw("\u{10FFFD}", font));
    return ffGlyphChecks.get(key);
  };
  document.querySelectorAll("#keys .token:not(.glyphs-checked), #ff-results .token:not(.glyphs-checked)").forEach((token) => {
    token.classList.add("glyphs-checked");
    const font = getComputedStyle(token).font;
    const characters = Array.from(token.textContent);
    if (!characters.some((c) => c.codePointAt(0) > 0x7e && c !== "\u25cc" && missing(c, font))) return;
    token.textContent = characters.map((c, i) => {
      if (c === "\u25cc" && i + 1 < characters.length && missing(characters[i + 1], font)) return "";
      const code = c.codePointAt(0);
      if (code <= 0x7e || c === "\u25cc" || !missing(c, font)) return c;
      return code < 0x10000 ? `\\u${code.toString(16).padStart(4, "0")}` : `\\U${code.toString(16).padStart(8, "0")}`;
    }).join("");
    token.classList.add("no-glyph");
    token.title += " (no font here draws it)";
  });
}
document.addEventListener("htmx:afterSettle", (event) => {
  if (document.getElementById("ff-keys")) ffMarkMissingGlyphs();
});
document.addEventListener("htmx:afterRequest", (event) => {
  const form = event.detail.elt;
  if (form.id !== "ff-run" || !form.elements.origin.value) return;
  const status = document.getElementById(form.elements.origin.value);
  form.elements.origin.value = "";
  if (status && event.detail.xhr.status >= 400) {
    status.textContent = `Could not run: ${document.getElementById("errors").textContent.trim()}`;
  }
});
document.addEventListener("change", (event) => {
  const keys = document.getElementById("ff-keys");
  if (keys && keys.contains(event.target) && event.target.name !== "page") keys.elements.page.value = "0";
}, true);
document.addEventListener("click", (event) => {
  const button = event.target.closest("button");
  if (!button) return;
  const edits = document.getElementById("edits");
  const keys = document.getElementById("ff-keys");
  if (button.classList.contains("edit-key") && edits) {
    ffApplyKeyEdit(button);
  } else if (button.id === "clear-edits" && edits) {
    edits.value = "";
    if (document.querySelector("#ff-run textarea[name=text]").value.trim()) submitForm("ff-run");
  } else if (button.classList.contains("page") && keys) {
    keys.elements.page.value = button.dataset.page;
    submitForm("ff-keys");
  } else if (button.classList.contains("key-link") && keys) {
    keys.elements.layer.value = button.dataset.layer;
    keys.elements.key.value = button.dataset.key;
    keys.elements.page.value = "0";
    submitForm("ff-keys");
    keys.scrollIntoView({ behavior: "smooth" });
  }
});

// A request in flight shows its elapsed seconds in its busy indicator, so a long run visibly moves on.
const elapsedClocks = new Map();  // indicator element -> interval id
function indicatorOf(element) {
  const selector = element.closest("[hx-indicator]")?.getAttribute("hx-indicator");
  return selector ? document.querySelector(selector) : null;
}
document.addEventListener("htmx:beforeRequest", (event) => {
  const indicator = indicatorOf(event.detail.elt);
  if (!indicator) return;
  let clock = indicator.querySelector(".elapsed");
  if (!clock) {
    clock = document.createElement("span");
    clock.className = "elapsed";
    indicator.append(clock);
  }
  const started = performance.now();
  clock.textContent = "";
  clearInterval(elapsedClocks.get(indicator));
  elapsedClocks.set(indicator, setInterval(() => {
    clock.textContent = ` ${Math.round((performance.now() - started) / 1000)} s`;
  }, 1000));
});
document.addEventListener("htmx:afterRequest", (event) => {
  const indicator = indicatorOf(event.detail.elt);
  if (indicator) clearInterval(elapsedClocks.get(indicator));
});
// Every text field at least as wide as its placeholder (the example of what to type), within its container.
const placeholderCanvas = document.createElement("canvas").getContext("2d");
function fitPlaceholders(root) {
  root.querySelectorAll("input[placeholder]:not([type]), input[type=text][placeholder]").forEach((input) => {
    const style = getComputedStyle(input);
    placeholderCanvas.font = style.font;
    const chrome = parseFloat(style.paddingLeft) + parseFloat(style.paddingRight)
      + parseFloat(style.borderLeftWidth) + parseFloat(style.borderRightWidth);
    const needed = Math.ceil(placeholderCanvas.measureText(input.placeholder).width + chrome + 2);
    const room = input.closest("form, section, main") || document.body;
    input.style.minWidth = `${Math.min(needed, room.clientWidth)}px`;
  });
}
document.addEventListener("DOMContentLoaded", () => fitPlaceholders(document));
document.addEventListener("htmx:afterSettle", (event) => fitPlaceholders(event.target));
