; Inno Setup script: wraps the one-dir bundle (dist\ctx) into a per-user installer with
; Start-menu entries, an optional start-at-login entry, `ctx` on PATH and an uninstaller.
;   iscc /DAppVersion=0.1.0 /DSourceDir=..\..\dist\ctx /DOutputDir=..\..\dist packaging\windows\ctx.iss
#ifndef AppVersion
  #define AppVersion "0.0.0"
#endif
#ifndef SourceDir
  #define SourceDir "..\..\dist\ctx"
#endif
#ifndef OutputDir
  #define OutputDir "..\..\dist"
#endif

[Setup]
AppId={{6C7A1E0B-3F7D-4C55-9C1E-2B7E1C0D7A11}
AppName=ctx
AppVersion={#AppVersion}
AppPublisher=ctx
AppComments=Local context engine: encrypted memory for your AI assistant
DefaultDirName={localappdata}\Programs\ctx
DefaultGroupName=ctx
PrivilegesRequired=lowest
PrivilegesRequiredOverridesAllowed=dialog
ArchitecturesAllowed=x64compatible
ArchitecturesInstallIn64BitMode=x64compatible
OutputDir={#OutputDir}
OutputBaseFilename=ctx-{#AppVersion}-windows-x64-setup
SetupIconFile=..\icons\ctx.ico
UninstallDisplayIcon={app}\ctx-app.exe
Compression=lzma2/max
SolidCompression=yes
WizardStyle=modern
ChangesEnvironment=yes
CloseApplications=yes

[Tasks]
Name: "path"; Description: "Add the ctx command to PATH"; Flags: checkedonce
Name: "desktopicon"; Description: "{cm:CreateDesktopIcon}"; Flags: unchecked

[Files]
Source: "{#SourceDir}\*"; DestDir: "{app}"; Flags: ignoreversion recursesubdirs createallsubdirs

[Icons]
Name: "{group}\ctx"; Filename: "{app}\ctx-app.exe"; Comment: "The ctx tray app"
Name: "{group}\Uninstall ctx"; Filename: "{uninstallexe}"
Name: "{autodesktop}\ctx"; Filename: "{app}\ctx-app.exe"; Tasks: desktopicon

[Registry]
Root: HKCU; Subkey: "Environment"; ValueType: expandsz; ValueName: "Path"; \
    ValueData: "{olddata};{app}"; Tasks: path; Check: NeedsAddPath(ExpandConstant('{app}'))

[Run]
Filename: "{app}\ctx-app.exe"; Description: "Start ctx now"; Flags: nowait postinstall skipifsilent

[UninstallRun]
Filename: "{app}\ctx-app.exe"; Parameters: "--quit"; Flags: runhidden; RunOnceId: "QuitCtx"

[Code]
function NeedsAddPath(Dir: string): Boolean;
var
  Current: string;
begin
  if not RegQueryStringValue(HKCU, 'Environment', 'Path', Current) then
    Current := '';
  Result := Pos(';' + Uppercase(Dir) + ';', ';' + Uppercase(Current) + ';') = 0;
end;
