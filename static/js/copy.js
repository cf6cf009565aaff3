// A button with data-copy="<field id>" copies that field's value (the agent key shown once).
document.addEventListener("click", (event) => {
  const button = event.target.closest("[data-copy]");
  if (!button) return;
  const field = document.getElementById(button.dataset.copy);
  field.select();
  const copied = () => { button.textContent = "Copied"; };
  // without the Clipboard API (a page that is not a secure context) or its permission
  const fallback = () => { button.textContent = document.execCommand("copy") ? "Copied" : "Press Ctrl+C"; };
  if (navigator.clipboard) navigator.clipboard.writeText(field.value).then(copied, fallback);
  else fallback();
});
