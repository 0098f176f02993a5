// The one-time password reset page (/reset-password#token=...). The token is in
// the fragment, which browsers never send to a server or in a Referer; it is
// removed from the address bar at once. The user chooses the new password
// here; nobody else learns it (decision 0022).
import { checkNewPassword } from "./passwords.js";

const token = new URLSearchParams(location.hash.slice(1)).get("token") || "";
history.replaceState(null, "", location.pathname);

const form = document.getElementById("reset");
checkNewPassword(document.getElementById("pw"), (problem) =>
  ({ short: "The password needs at least 8 characters.", long: "The password is longer than 1024 bytes." })[problem] || "");
const result = document.getElementById("result");
const say = (text) => { result.textContent = text; };

if (!token) { say("This link has no reset token: ask your admin for a new link."); form.hidden = true; }

form.addEventListener("submit", async (event) => {
  event.preventDefault();
  const pw = document.getElementById("pw").value;
  if (pw !== document.getElementById("pw2").value) { say("The passwords differ."); return; }
  const res = await fetch("/api/v1/auth/passwordReset", {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ token, newPassword: pw }),
    credentials: "omit",
  });
  const body = await res.json().catch(() => ({}));
  if (res.ok) { form.hidden = true; say(`Password set for ${body.username}. Sign in with it now.`); }
  else say(body.message || `Error ${res.status}`);
});
