// Keeps small controls in step (figures are drawn by figures.js).
function syncSlots() {
  const slider = document.querySelector("input[name=memory_size]");
  if (!slider) return;
  document.getElementById("memory-size-value").textContent = slider.value;
  document.querySelectorAll(".slot").forEach((label) => {
    const present = Number(label.dataset.slot) < Number(slider.value);
    label.hidden = !present;
    if (!present) label.querySelector("input").checked = false;
  });
}

// A successful swap elsewhere clears old errors; an error fragment swaps into #errors itself.
document.addEventListener("htmx:afterSwap", (event) => {
  if (event.detail.target.id !== "errors") document.getElementById("errors").replaceChildren();
});
document.addEventListener("input", (event) => {
  if (event.target.name === "memory_size") syncSlots();
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
    const present = edits.value.split(";").map((part) => part.trim()).filter(Boolean);
    if (!present.includes(button.dataset.edit)) present.push(button.dataset.edit);
    edits.value = present.join("; ");
    if (document.querySelector("#ff-run textarea[name=text]").value.trim()) submitForm("ff-run");
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
