package solana

// mustProgramKey turns a hard-coded program address into a key at package
// initialisation; the inputs are constants checked by the tests, so a panic
// here can only mean the source itself was edited wrongly.
func mustProgramKey(s string) PublicKey {
	k, err := ParsePublicKey(s)
	if err != nil {
		panic("solana: bad built-in program address " + s + ": " + err.Error())
	}
	return k
}

// The program addresses below are read-only tables; they are exposed through
// functions so no caller can reassign them and change what the verifier
// trusts.
var (
	systemProgramKey          = mustProgramKey("11111111111111111111111111111111")
	tokenProgramKey           = mustProgramKey("TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA")
	token2022ProgramKey       = mustProgramKey("TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb")
	associatedTokenProgramKey = mustProgramKey("ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL")
	computeBudgetProgramKey   = mustProgramKey("ComputeBudget111111111111111111111111111111")
	memoProgramKey            = mustProgramKey("MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr")
	lighthouseProgramKey      = mustProgramKey("L2TExMFKdjpN9kozasaurPirfHy9P8sbXoAN1qA3S95")
)

// SystemProgram is exposed so tests and callers can name the one program
// every wallet knows without repeating its all-zero address.
func SystemProgram() PublicKey { return systemProgramKey }

// TokenProgram is the original SPL Token program, which owns most stablecoin
// mints (USDC included); the verifier accepts TransferChecked only from it or
// from Token-2022.
func TokenProgram() PublicKey { return tokenProgramKey }

// Token2022Program is SPL Token-2022, the other token program the x402 exact
// scheme allows; its associated token accounts live at different addresses
// than the classic program's for the same owner and mint.
func Token2022Program() PublicKey { return token2022ProgramKey }

// AssociatedTokenProgram is the program under which ATAs are derived; the
// destination of a payment must be the payee's ATA under it.
func AssociatedTokenProgram() PublicKey { return associatedTokenProgramKey }

// ComputeBudgetProgram carries the limit/price instructions that decide the
// priority fee the fee payer ends up paying, hence the verifier's scrutiny.
func ComputeBudgetProgram() PublicKey { return computeBudgetProgramKey }

// MemoProgram is SPL Memo v2, the only memo program the scheme allows; the
// memo keeps otherwise identical payments distinct and carries extra.memo.
func MemoProgram() PublicKey { return memoProgramKey }

// LighthouseProgram is the wallet-injected guard program (Phantom, Solflare)
// that the scheme must tolerate in the optional instruction slots.
func LighthouseProgram() PublicKey { return lighthouseProgramKey }
