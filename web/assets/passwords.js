// The server's password rule, shown before anyone trips over it (issue 19,
// defect 10): app/users/service.py `valid_password` takes 8 characters (code
// points, as Python counts them) up to 1024 bytes of UTF-8. A test compares
// these numbers with the server's.
export const MIN_PASSWORD = 8;
export const MAX_PASSWORD_BYTES = 1024;

// "short", "long" or "" (fine).
export function passwordProblem(pw) {
  if ([...pw].length < MIN_PASSWORD) return "short";
  if (new TextEncoder().encode(pw).length > MAX_PASSWORD_BYTES) return "long";
  return "";
}

// Checks a new-password input as it is typed; `say(problem)` answers the
// message the form shows. The browser refuses to submit while it is invalid.
export function checkNewPassword(input, say) {
  const check = () => input.setCustomValidity(input.value ? say(passwordProblem(input.value)) : "");
  input.addEventListener("input", check);
  return check;
}
