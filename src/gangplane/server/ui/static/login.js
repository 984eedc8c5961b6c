// `gangplane dashboard` links to /ui/login#token=...: the fragment never leaves the browser, so post it as
// the login form would, then forget it.
const match = /(?:^#|&)token=([^&]+)/.exec(location.hash);
if (match) {
  history.replaceState(null, "", location.pathname);
  const submit = () => {
    const form = document.getElementById("login");
    form.elements.token.value = decodeURIComponent(match[1]);
    form.submit();
  };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", submit);
  else submit();
}
