// A button with data-copy="<field id>" copies that field's value (the agent key shown once); one with
// data-copy-text="<value>" copies that value (a full id the logs show shortened).
document.addEventListener("click", (event) => {
  const button = event.target.closest("[data-copy], [data-copy-text]");
  if (!button) return;
  const field = button.dataset.copy ? document.getElementById(button.dataset.copy) : null;
  const value = field ? field.value : button.dataset.copyText;
  if (field) field.select();
  const label = button.textContent;
  const copied = () => {
    button.textContent = "Copied";
    if (!field) setTimeout(() => { button.textContent = label; }, 1500);  // a log row's button serves again
  };
  // without the Clipboard API (a page that is not a secure context) or its permission
  const fallback = () => {
    if (!field) { window.prompt("Copy the full id:", value); return; }
    button.textContent = document.execCommand("copy") ? "Copied" : "Press Ctrl+C";
  };
  // ...or one that neither answers nor refuses (a browser waiting on a permission, a busy machine): after a second
  const unanswered = new Promise((_, reject) => setTimeout(reject, 1000));
  if (navigator.clipboard) Promise.race([navigator.clipboard.writeText(value), unanswered]).then(copied, fallback);
  else fallback();
});
