package tools

// All returns the 19 tools: DESIGN.md's 17 in its order, then pay_invoice
// and fetch_paid.
// Each call builds fresh values; callers may keep and share the slice.
func All() []Tool {
	return []Tool{
		sendPayment(),
		payAgent(),
		scanPayments(),
		getBalance(),
		createInvoice(),
		checkInvoices(),
		resolveName(),
		registerName(),
		getAgentInfo(),
		withdraw(),
		withdrawAll(),
		privacyCheck(),
		fundWallet(),
		schedulePayment(),
		listSchedules(),
		manageSchedule(),
		saveMemory(),
		// Added after DESIGN.md's 17 (issue 19).
		payInvoice(),
		fetchPaid(),
	}
}

// ByName finds a tool.
func ByName(name string) (Tool, bool) {
	for _, t := range All() {
		if t.Name == name {
			return t, true
		}
	}
	return Tool{}, false
}

// MovesValue reports whether the tool named name moves value
// (Tool.MovesValue); false for a name that is no tool. Clients that must
// tell a failed payment from another failure (the CLI's exit code) ask
// this instead of keeping their own list.
func MovesValue(name string) bool {
	t, ok := ByName(name)
	return ok && t.MovesValue
}
