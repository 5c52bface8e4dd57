package tools

// All returns the 21 tools: DESIGN.md's 17 in its order, then pay_invoice,
// fetch_paid, payment_history and cancel_invoice.
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
		// Added for questions about what was paid, and to withdraw an
		// invoice (issue 33).
		paymentHistory(),
		cancelInvoice(),
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
